// The thread list beside the chat: CopilotKit's `useThreads` hook (our own small UI; CopilotKit's
// drawer is a licensed component), backed by agui-lambda's threads. Rename, archive, unarchive
// and delete; archived threads only when asked for; more on demand.
import { useEffect, useRef, useState } from "react";
import { UseAgentUpdate, useAgent, useThreads } from "@copilotkit/react-core/v2";

const AGENT = "default";

export function ThreadList({ current, onOpen, onNew }) {
  const [showArchived, setShowArchived] = useState(false);
  const list = useThreads({ agentId: AGENT, includeArchived: showArchived, limit: 20 });
  const { agent } = useAgent({ agentId: AGENT, updates: [UseAgentUpdate.OnRunStatusChanged] });
  // Without CopilotKit's paid tier nothing pushes list changes: refresh when a run ends (a new
  // thread appears, with its title).
  const wasRunning = useRef(false);
  const running = agent?.isRunning ?? false;
  const refetch = list.refetchThreads;
  useEffect(() => {
    if (wasRunning.current && !running) refetch();
    wasRunning.current = running;
  }, [running, refetch]);

  return (
    <aside className="threads" data-testid="thread-list">
      <div className="threads-head">
        <button type="button" data-testid="new-thread" onClick={onNew}>
          New conversation
        </button>
        <label>
          <input
            type="checkbox"
            data-testid="show-archived"
            checked={showArchived}
            onChange={(event) => setShowArchived(event.target.checked)}
          />
          archived
        </label>
      </div>
      {list.isLoading && <div className="threads-note">Loading…</div>}
      {list.listError && (
        <div className="threads-note" data-testid="thread-list-error">
          {list.listError.message}
        </div>
      )}
      <ul>
        {list.threads.map((thread) => (
          <ThreadItem
            key={thread.id}
            thread={thread}
            current={thread.id === current}
            onOpen={() => onOpen(thread.id)}
            list={list}
            onDeleted={() => thread.id === current && onNew()}
          />
        ))}
      </ul>
      {list.hasMoreThreads && (
        <button
          type="button"
          data-testid="more-threads"
          disabled={list.isFetchingMoreThreads}
          onClick={list.fetchMoreThreads}
        >
          More
        </button>
      )}
    </aside>
  );
}

function ThreadItem({ thread, current, onOpen, list, onDeleted }) {
  const [naming, setNaming] = useState(false);
  const [name, setName] = useState(thread.name ?? "");
  const rename = async (event) => {
    event.preventDefault();
    setNaming(false);
    if (name.trim() && name !== thread.name) await list.renameThread(thread.id, name.trim());
  };
  return (
    <li
      className={current ? "thread-item current" : "thread-item"}
      data-testid="thread-item"
      data-thread-id={thread.id}
      data-archived={thread.archived ? "true" : "false"}
    >
      {naming ? (
        <form onSubmit={rename}>
          <input
            data-testid="rename-input"
            autoFocus
            value={name}
            onChange={(event) => setName(event.target.value)}
            onBlur={rename}
          />
        </form>
      ) : (
        <button type="button" className="thread-open" data-testid="thread-open" onClick={onOpen}>
          {thread.name || "Untitled"}
        </button>
      )}
      <span className="thread-actions">
        <button type="button" title="Rename" data-testid="thread-rename" onClick={() => setNaming(true)}>
          ✎
        </button>
        {thread.archived ? (
          <button type="button" title="Unarchive" data-testid="thread-unarchive" onClick={() => list.unarchiveThread(thread.id)}>
            ⇡
          </button>
        ) : (
          <button type="button" title="Archive" data-testid="thread-archive" onClick={() => list.archiveThread(thread.id)}>
            ⇣
          </button>
        )}
        <button
          type="button"
          title="Delete"
          data-testid="thread-delete"
          onClick={async () => {
            await list.deleteThread(thread.id);
            onDeleted();
          }}
        >
          ✕
        </button>
      </span>
    </li>
  );
}

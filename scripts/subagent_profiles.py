"""AGENT_PROFILES for the sub-agent tests (scripts/test.sh) and the assistant-ui example: a
coordinator that delegates to a researcher (which delegates to a factchecker), to another
agui-lambda process and to aimock's AG-UI mock.

Usage: python3 scripts/subagent_profiles.py REMOTE_BASE_URL MOCK_AGENT_URL
"""

import json
import sys

remote, mock = sys.argv[1], sys.argv[2]
print(
    json.dumps(
        {
            "coordinator": {
                "description": "Plans the answer and hands research to specialists.",
                "systemPrompt": "You coordinate specialists: delegate research, then answer.",
                "subagents": [
                    "researcher",
                    {
                        "name": "remote_researcher",
                        "description": "A researcher that runs in another agui-lambda process.",
                        "url": f"{remote}/agent",
                        "cancelUrl": f"{remote}/threads/{{threadId}}/runs/{{runId}}/cancel",
                        "timeoutMs": 60000,
                    },
                    {
                        "name": "mock_agent",
                        "description": "aimock's AG-UI mock agent.",
                        "url": mock,
                    },
                ],
            },
            "researcher": {
                "description": "Finds facts and checks them with the factchecker.",
                "systemPrompt": "You research one question and answer it briefly.",
                "model": "researcher-model",
                "subagents": ["factchecker"],
            },
            "factchecker": {
                "description": "Checks one fact.",
                "systemPrompt": "You check facts.",
            },
        }
    )
)

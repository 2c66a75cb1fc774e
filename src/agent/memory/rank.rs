//! Lexical relevance of memories to a query: Okapi BM25 over lowercased alphanumeric words.
//!
//! Written here rather than taken from a crate: the memories of one principal are at most a few
//! thousand short texts, scored in one pass; the BM25 crates bring tokenisers, stemmers and
//! stop-word lists (and their tables) for corpora this never has, for about forty lines of maths.

use crate::store::Memory;
use std::collections::HashMap;

/// BM25's term-frequency saturation and length normalisation, at their usual values.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The words of `text`: lowercased runs of letters and digits.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// `memories` with their BM25 score for `query`, best first, those sharing no word with it left
/// out; ties keep the newest first (the order `memories` come in).
pub(crate) fn rank<'a>(query: &str, memories: &'a [Memory]) -> Vec<(&'a Memory, f64)> {
    let mut terms: Vec<String> = words(query).collect();
    terms.sort();
    terms.dedup();
    if terms.is_empty() || memories.is_empty() {
        return Vec::new();
    }
    let documents: Vec<Vec<String>> = memories.iter().map(|m| words(&m.text).collect()).collect();
    let count = documents.len() as f64;
    let average = documents.iter().map(Vec::len).sum::<usize>() as f64 / count;
    let mut frequency: HashMap<&str, f64> = HashMap::new();
    for term in &terms {
        let holding = documents.iter().filter(|doc| doc.contains(term)).count() as f64;
        frequency.insert(term, holding);
    }
    let mut scored: Vec<(&Memory, f64)> = memories
        .iter()
        .zip(&documents)
        .map(|(memory, doc)| {
            let length = doc.len() as f64;
            let score = terms
                .iter()
                .map(|term| {
                    let holding = frequency.get(term.as_str()).copied().unwrap_or(0.0);
                    let idf = (1.0 + (count - holding + 0.5) / (holding + 0.5)).ln();
                    let tf = doc.iter().filter(|word| *word == term).count() as f64;
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average.max(1.0)))
                })
                .sum::<f64>();
            (memory, score)
        })
        .filter(|(_, score)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryId;

    fn memory(text: &str, at: i64) -> Memory {
        Memory {
            id: MemoryId::new(at),
            text: text.to_owned(),
            pinned: false,
            created_at_ms: at,
            updated_at_ms: at,
            thread_id: None,
            run_id: None,
            expires_at_ms: None,
        }
    }

    #[test]
    fn the_memory_that_shares_the_rare_word_ranks_first() {
        let memories = [
            memory("Sam lives in Lyon", 3),
            memory("Sam is vegetarian", 2),
            memory("Sam likes Sam's bike", 1),
        ];
        let ranked = rank("Is Sam VEGETARIAN?", &memories);
        assert_eq!(ranked[0].0.text, "Sam is vegetarian");
        assert_eq!(ranked.len(), 3, "every memory naming Sam scores");
        assert!(rank("pizza", &memories).is_empty());
        assert!(rank("  ", &memories).is_empty());
    }

    #[test]
    fn a_word_repeated_in_a_short_memory_outranks_it_once_in_a_long_one() {
        let memories = [
            memory(
                "coffee at the station with colleagues every weekday morning",
                2,
            ),
            memory("coffee coffee", 1),
        ];
        assert_eq!(rank("coffee", &memories)[0].0.text, "coffee coffee");
    }
}

//! The probe's results on their way to the server, kept on disk so that neither a cut
//! network, a server restart nor `kill -9` of the probe loses one.
//!
//! Two files in the probe's data directory:
//! - `probe-results.jsonl`: one result a line, appended as soon as a check ends (one
//!   `write` each, so a killed process leaves at most a torn last line, which is skipped);
//! - `probe-results.state`: `<done> <shed>`, the highest sequence number the server stored
//!   or the buffer shed, and how many results were shed in all (written to a temporary
//!   file and renamed over it).
//!
//! Results above `done` are pending, in sequence order. Past `max_results` pending, or
//! older than `max_age`, the oldest are shed and counted. The results file is rewritten
//! with the pending ones alone once it holds many more lines than that.

use std::collections::HashSet;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

const RESULTS: &str = "probe-results.jsonl";
const STATE: &str = "probe-results.state";

/// How much the buffer keeps before shedding.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_results: usize,
    pub max_age_ms: i64,
}

/// One pending result: its sequence number, when it was taken, and its JSON text (a
/// `ProbeResult` object, `seq` included).
#[derive(Debug, Clone)]
pub struct Pending {
    pub seq: i64,
    pub at_ms: i64,
    pub json: String,
}

/// The buffer. Not shared across threads by itself: the probe holds it in a mutex.
pub struct Buffer {
    dir: PathBuf,
    file: File,
    pending: VecDeque<Pending>,
    next_seq: i64,
    done: i64,
    shed: u64,
    /// Lines in the results file, pending or not.
    lines: usize,
    limits: Limits,
}

impl Buffer {
    /// Open (or start) the buffer in `dir`, keeping what a previous run left pending.
    pub fn open(dir: &Path, limits: Limits) -> std::io::Result<Buffer> {
        std::fs::create_dir_all(dir)?;
        let (done, shed) = read_state(&dir.join(STATE));
        let mut pending = VecDeque::new();
        let mut highest = done;
        let mut lines = 0;
        if let Ok(f) = File::open(dir.join(RESULTS)) {
            // Split on newlines as bytes: a torn line may end inside a character.
            for line in BufReader::new(f).split(b'\n') {
                let Ok(line) = line else { break };
                lines += 1;
                let Ok(line) = String::from_utf8(line) else {
                    continue;
                };
                // A torn last line (the process killed mid-write) does not parse: skipped.
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                let (Some(seq), Some(at)) = (
                    v.get("seq").and_then(|s| s.as_i64()),
                    v.get("checkedAtMs").and_then(|s| s.as_i64()),
                ) else {
                    continue;
                };
                highest = highest.max(seq);
                if seq > done && pending.back().is_none_or(|p: &Pending| p.seq < seq) {
                    pending.push_back(Pending {
                        seq,
                        at_ms: at,
                        json: line,
                    });
                }
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(RESULTS))?;
        let mut buffer = Buffer {
            dir: dir.to_path_buf(),
            file,
            pending,
            next_seq: highest + 1,
            done,
            shed,
            lines,
            limits,
        };
        // A torn line would join the next one written: start a fresh line.
        buffer.file.write_all(b"\n")?;
        buffer.lines += 1;
        buffer.compact_if_sparse()?;
        Ok(buffer)
    }

    /// Keep one result. `make` gets its sequence number and returns its JSON text (one
    /// line). Sheds the oldest past the limits.
    pub fn push(
        &mut self,
        at_ms: i64,
        now_ms: i64,
        make: impl FnOnce(i64) -> String,
    ) -> std::io::Result<i64> {
        let seq = self.next_seq;
        let json = make(seq);
        debug_assert!(!json.contains('\n'));
        let mut line = String::with_capacity(json.len() + 1);
        line.push_str(&json);
        line.push('\n');
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            // Part of the line may be written: end it, so the next one starts clean.
            let _ = self.file.write_all(b"\n");
            return Err(e);
        }
        self.next_seq += 1;
        self.lines += 1;
        self.pending.push_back(Pending { seq, at_ms, json });
        self.shed_beyond_limits(now_ms)?;
        Ok(seq)
    }

    /// Shed the oldest results past the count or the age limit.
    pub fn shed_beyond_limits(&mut self, now_ms: i64) -> std::io::Result<u64> {
        let mut shed = 0;
        while let Some(front) = self.pending.front() {
            let too_many = self.pending.len() > self.limits.max_results;
            let too_old = now_ms - front.at_ms > self.limits.max_age_ms;
            if !too_many && !too_old {
                break;
            }
            self.done = front.seq;
            self.pending.pop_front();
            shed += 1;
        }
        if shed > 0 {
            self.shed += shed;
            self.write_state()?;
            self.compact_if_sparse()?;
        }
        Ok(shed)
    }

    /// The first `n` pending results, oldest first.
    pub fn first(&self, n: usize) -> Vec<Pending> {
        self.pending.iter().take(n).cloned().collect()
    }

    /// The server stored everything up to `seq`: forget it.
    pub fn ack(&mut self, seq: i64) -> std::io::Result<()> {
        if seq <= self.done {
            return Ok(());
        }
        while self.pending.front().is_some_and(|p| p.seq <= seq) {
            self.pending.pop_front();
        }
        self.done = seq;
        self.next_seq = self.next_seq.max(seq + 1);
        self.write_state()?;
        self.compact_if_sparse()
    }

    /// Drop these pending results (the server refused them for good); counted as shed.
    /// Their lines stay in the file until it is compacted: after a restart before that,
    /// they are sent again and refused again.
    pub fn drop_refused(&mut self, seqs: &[i64]) -> std::io::Result<usize> {
        let refused: HashSet<i64> = seqs.iter().copied().collect();
        let before = self.pending.len();
        self.pending.retain(|p| !refused.contains(&p.seq));
        let dropped = before - self.pending.len();
        if dropped > 0 {
            self.shed += dropped as u64;
            self.write_state()?;
            self.compact_if_sparse()?;
        }
        Ok(dropped)
    }

    /// Continue numbering after `seq` (the server's last stored result), as when the
    /// buffer was lost; what is pending up to it was stored already.
    pub fn continue_after(&mut self, seq: i64) -> std::io::Result<()> {
        self.next_seq = self.next_seq.max(seq + 1);
        self.ack(seq)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Results shed in all.
    pub fn shed(&self) -> u64 {
        self.shed
    }

    /// Age of the oldest pending result.
    pub fn lag_ms(&self, now_ms: i64) -> Option<i64> {
        self.pending.front().map(|p| (now_ms - p.at_ms).max(0))
    }

    fn write_state(&self) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("{STATE}.tmp"));
        let mut f = File::create(&tmp)?;
        f.write_all(format!("{} {}\n", self.done, self.shed).as_bytes())?;
        f.sync_all()?;
        std::fs::rename(tmp, self.dir.join(STATE))
    }

    fn compact_if_sparse(&mut self) -> std::io::Result<()> {
        if self.lines > 2 * self.pending.len() + 1000 {
            self.compact()?;
        }
        Ok(())
    }

    /// Rewrite the results file with the pending results alone.
    fn compact(&mut self) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("{RESULTS}.tmp"));
        // Opened for appending before it takes the results file's place, so the handle
        // kept is the new file's whatever happens after the rename.
        File::create(&tmp)?;
        let file = OpenOptions::new().append(true).open(&tmp)?;
        {
            let mut out = std::io::BufWriter::new(&file);
            for p in &self.pending {
                out.write_all(p.json.as_bytes())?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, self.dir.join(RESULTS))?;
        self.file = file;
        self.lines = self.pending.len();
        Ok(())
    }
}

fn read_state(path: &Path) -> (i64, u64) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut parts = text.split_whitespace();
    let done = parts.next().and_then(|d| d.parse().ok()).unwrap_or(0);
    let shed = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (done, shed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: i64, at: i64) -> String {
        format!(r#"{{"seq":{seq},"checkedAtMs":{at},"monitorId":"mon_a","ok":true}}"#)
    }

    fn limits() -> Limits {
        Limits {
            max_results: 5,
            max_age_ms: 1_000_000,
        }
    }

    #[test]
    fn pending_results_survive_a_restart_and_acked_ones_do_not_come_back() {
        let dir = tempfile::tempdir().expect("dir");
        let mut b = Buffer::open(dir.path(), limits()).expect("open");
        for at in 0..4 {
            b.push(at, at, |seq| line(seq, at)).expect("push");
        }
        b.ack(2).expect("ack");
        drop(b);
        let mut b = Buffer::open(dir.path(), limits()).expect("reopen");
        let seqs: Vec<i64> = b.first(10).iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [3, 4]);
        assert_eq!(b.push(5, 5, |seq| line(seq, 5)).expect("push"), 5);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_numbering_goes_on() {
        let dir = tempfile::tempdir().expect("dir");
        let mut b = Buffer::open(dir.path(), limits()).expect("open");
        b.push(1, 1, |seq| line(seq, 1)).expect("push");
        drop(b);
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(RESULTS))
            .expect("file");
        // Cut inside a character (the first two bytes of `…`).
        f.write_all(b"{\"seq\":2,\"reason\":\"\xe2\x80")
            .expect("torn");
        drop(f);
        let mut b = Buffer::open(dir.path(), limits()).expect("reopen");
        assert_eq!(b.len(), 1);
        b.push(3, 3, |seq| line(seq, 3)).expect("push");
        drop(b);
        let b = Buffer::open(dir.path(), limits()).expect("again");
        let seqs: Vec<i64> = b.first(10).iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [1, 2]);
    }

    #[test]
    fn the_oldest_are_shed_past_the_limits_and_counted() {
        let dir = tempfile::tempdir().expect("dir");
        let mut b = Buffer::open(dir.path(), limits()).expect("open");
        for at in 0..8 {
            b.push(at, at, |seq| line(seq, at)).expect("push");
        }
        assert_eq!(b.len(), 5);
        assert_eq!(b.shed(), 3);
        assert_eq!(b.first(1)[0].seq, 4);
        // All but the newest (taken at 7) more than 1,000,000 ms old.
        b.shed_beyond_limits(1_000_007).expect("age");
        assert_eq!(b.len(), 1);
        assert_eq!(b.shed(), 7);
        drop(b);
        let b = Buffer::open(dir.path(), limits()).expect("reopen");
        assert_eq!((b.len(), b.shed()), (1, 7));
    }

    #[test]
    fn refused_results_are_dropped_and_a_lost_buffer_continues_after_the_server() {
        let dir = tempfile::tempdir().expect("dir");
        let mut b = Buffer::open(dir.path(), limits()).expect("open");
        for at in 0..3 {
            b.push(at, at, |seq| line(seq, at)).expect("push");
        }
        assert_eq!(b.drop_refused(&[2]).expect("drop"), 1);
        let seqs: Vec<i64> = b.first(10).iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [1, 3]);
        drop(b);
        let other = tempfile::tempdir().expect("dir");
        let mut fresh = Buffer::open(other.path(), limits()).expect("fresh");
        fresh.continue_after(40).expect("continue");
        assert_eq!(fresh.push(1, 1, |seq| line(seq, 1)).expect("push"), 41);
    }
}

//! What the benchmark reads about processes: CPU time and memory, from `/proc` (Linux).

use std::time::Duration;

/// Linux reports CPU times in clock ticks of 1/100 s (USER_HZ is 100 on every architecture
/// Linux supports for user space).
const TICKS_PER_SEC: u64 = 100;

/// User plus system CPU time of process `pid` ("self" for this one), if readable.
pub fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after it are plain.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / TICKS_PER_SEC,
    ))
}

/// CPU time of this process's threads alive now, to the nanosecond (the scheduler's own
/// count in `/proc/self/task/*/schedstat`), where [`cpu_time`] counts 10 ms ticks. Threads
/// that have exited are not counted, so only differences over a span in which no thread
/// ends mean anything (the plugin pieces' rounds: the runtime's workers and the plugins'
/// ticker live as long as the process).
pub fn cpu_time_fine() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        // A thread that ended since the listing has no file any more.
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// CPU time of the PostgreSQL server on this machine: every process named `postgres`
/// (the backends serving connections and the background writers). Processes that ended
/// since are not counted.
pub fn postgres_cpu() -> Duration {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim() == "postgres")
        })
        .filter_map(|pid| cpu_time(&pid))
        .sum()
}

/// Resident memory now and at its peak, in bytes.
pub fn memory() -> (Option<u64>, Option<u64>) {
    memory_of("self")
}

/// Resident memory of process `pid` now and at its peak, in bytes.
pub fn memory_of(pid: &str) -> (Option<u64>, Option<u64>) {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return (None, None);
    };
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let before = cpu_time("self").expect("cpu time");
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(120) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let after = cpu_time("self").expect("cpu time");
        assert!(x > 0);
        assert!(after > before, "{before:?} -> {after:?}");
        let (rss, peak) = memory();
        assert!(rss.is_some_and(|r| r > 1 << 20) && peak >= rss);
    }
}

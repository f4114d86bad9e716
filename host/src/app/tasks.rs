//! The server's background tasks and the order they stop in, written once.
//!
//! Every task is spawned through [`Tasks`] with the [`Phase`] it stops in and how it
//! stops ([`Stop`]). At shutdown one signal goes to every task at once; then the phases
//! are waited for in the order of the enum, the tasks of a phase in the order they were
//! added, and the steps added with [`Tasks::after`] run once their phase's tasks have
//! ended. A task that needs an earlier one gone (the recorder, whose senders the checks
//! hold) ends by itself when it is.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// When a task stops, earliest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// What starts checks and speaks for the node: the scheduler, regional
    /// confirmations, the node heartbeat. Nothing new is checked after this phase.
    Checks,
    /// The sweeps that turn time into events: missed heartbeats, escalations, the
    /// uptime figures, retention.
    Sweeps,
    /// Notifications already written: the outbox finishes the attempts it holds.
    Deliveries,
    /// The writers of what is still in memory: results handed over by checks, then key
    /// usage.
    Writers,
}

/// How a task is stopped once the shutdown signal is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Wait until it ends.
    Wait,
    /// Wait at most this long, then leave it (the process is ending).
    Within(Duration),
    /// Abort it: its work resumes at the next start.
    Abort,
}

type Step = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Task {
    phase: Phase,
    name: &'static str,
    stop: Stop,
    handle: JoinHandle<()>,
}

/// The background tasks of one server, and the signal that stops them.
pub struct Tasks {
    signal: watch::Sender<bool>,
    tasks: Vec<Task>,
    after: Vec<(Phase, Step)>,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks::new()
    }
}

impl Tasks {
    pub fn new() -> Tasks {
        Tasks {
            signal: watch::channel(false).0,
            tasks: Vec::new(),
            after: Vec::new(),
        }
    }

    /// The shutdown signal a task watches: it turns `true` once, at shutdown.
    pub fn signal(&self) -> watch::Receiver<bool> {
        self.signal.subscribe()
    }

    /// Spawn a task on the current runtime.
    pub fn spawn<F>(&mut self, phase: Phase, name: &'static str, stop: Stop, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.spawn_on(&tokio::runtime::Handle::current(), phase, name, stop, task);
    }

    /// Spawn a task on another runtime (the check threads).
    pub fn spawn_on<F>(
        &mut self,
        runtime: &tokio::runtime::Handle,
        phase: Phase,
        name: &'static str,
        stop: Stop,
        task: F,
    ) where
        F: Future<Output = ()> + Send + 'static,
    {
        self.adopt(phase, name, stop, runtime.spawn(task));
    }

    /// Take charge of a task spawned elsewhere (the recorder spawns its own writer).
    pub fn adopt(&mut self, phase: Phase, name: &'static str, stop: Stop, handle: JoinHandle<()>) {
        self.tasks.push(Task {
            phase,
            name,
            stop,
            handle,
        });
    }

    /// A step of the shutdown itself, run once every task of `phase` has ended.
    pub fn after<F>(&mut self, phase: Phase, step: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.after.push((phase, Box::pin(step)));
    }

    /// Send the signal, then stop the tasks phase by phase.
    pub async fn shutdown(self) {
        let _ = self.signal.send(true);
        let mut tasks = self.tasks;
        let mut after = self.after;
        // Stable sorts: within a phase, the order things were added.
        tasks.sort_by_key(|t| t.phase);
        after.sort_by_key(|(phase, _)| *phase);
        let mut tasks = tasks.into_iter().peekable();
        let mut after = after.into_iter().peekable();
        for phase in [
            Phase::Checks,
            Phase::Sweeps,
            Phase::Deliveries,
            Phase::Writers,
        ] {
            while let Some(task) = tasks.next_if(|t| t.phase == phase) {
                stop(task).await;
            }
            while let Some((_, step)) = after.next_if(|(p, _)| *p == phase) {
                step.await;
            }
        }
    }
}

async fn stop(task: Task) {
    let ended = match task.stop {
        Stop::Wait => task.handle.await.is_ok(),
        Stop::Within(limit) => match tokio::time::timeout(limit, task.handle).await {
            Ok(joined) => joined.is_ok(),
            Err(_) => {
                tracing::warn!(task = task.name, "did not stop in time; leaving it");
                return;
            }
        },
        Stop::Abort => {
            task.handle.abort();
            let _ = task.handle.await;
            return;
        }
    };
    if !ended {
        tracing::warn!(task = task.name, "ended with a panic");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn log() -> Arc<Mutex<Vec<&'static str>>> {
        Arc::new(Mutex::new(Vec::new()))
    }

    /// A task that waits for the signal, takes `ms` to finish, then notes that it ended.
    fn until_signal(
        tasks: &Tasks,
        log: &Arc<Mutex<Vec<&'static str>>>,
        name: &'static str,
        ms: u64,
    ) -> impl Future<Output = ()> + Send + 'static {
        let mut signal = tasks.signal();
        let log = log.clone();
        async move {
            let _ = signal.wait_for(|stop| *stop).await;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            log.lock().expect("log").push(name);
        }
    }

    fn note(
        log: &Arc<Mutex<Vec<&'static str>>>,
        name: &'static str,
    ) -> impl Future<Output = ()> + Send + 'static {
        let log = log.clone();
        async move { log.lock().expect("log").push(name) }
    }

    #[tokio::test]
    async fn a_phases_steps_run_once_its_tasks_have_ended_whatever_the_order_of_adding() {
        let log = log();
        let mut tasks = Tasks::new();
        // Added out of order; the slow tasks of early phases still end before the steps
        // that follow their phase.
        tasks.after(Phase::Writers, note(&log, "closed"));
        let writer = until_signal(&tasks, &log, "writer", 1);
        tasks.spawn(Phase::Writers, "writer", Stop::Wait, writer);
        let scheduler = until_signal(&tasks, &log, "scheduler", 40);
        tasks.spawn(Phase::Checks, "scheduler", Stop::Wait, scheduler);
        tasks.after(Phase::Checks, note(&log, "left"));
        let heartbeat = until_signal(&tasks, &log, "heartbeat", 20);
        tasks.spawn(Phase::Checks, "heartbeat", Stop::Wait, heartbeat);
        let outbox = until_signal(&tasks, &log, "outbox", 60);
        tasks.spawn(Phase::Deliveries, "outbox", Stop::Wait, outbox);
        tasks.shutdown().await;
        let log = log.lock().expect("log").clone();
        let at = |name| log.iter().position(|n| *n == name).expect("noted");
        assert_eq!(log.len(), 6, "{log:?}");
        assert!(
            at("left") > at("scheduler") && at("left") > at("heartbeat"),
            "{log:?}"
        );
        assert_eq!(log.last(), Some(&"closed"), "{log:?}");
    }

    #[tokio::test]
    async fn a_task_that_overstays_is_left_and_an_aborted_one_is_cut_short() {
        let log = log();
        let mut tasks = Tasks::new();
        tasks.spawn(
            Phase::Sweeps,
            "sweep",
            Stop::Abort,
            std::future::pending::<()>(),
        );
        tasks.spawn(
            Phase::Deliveries,
            "stuck",
            Stop::Within(Duration::from_millis(20)),
            std::future::pending::<()>(),
        );
        let writer = until_signal(&tasks, &log, "writer", 1);
        tasks.spawn(Phase::Writers, "writer", Stop::Wait, writer);
        // Neither task that never ends holds the shutdown up (a hang fails here).
        tokio::time::timeout(Duration::from_secs(60), tasks.shutdown())
            .await
            .expect("the shutdown ends");
        assert_eq!(*log.lock().expect("log"), ["writer"]);
    }
}

//! Stopping a service in two steps: a drain (take no more work, finish what is in
//! flight) and an abort (stop the work in flight too). Both binaries install the same
//! handlers: the first Ctrl-C or SIGTERM drains, the second aborts.

use tokio::sync::watch;

/// Asks the service to stop: [`ShutdownTrigger::drain`] stops intake and lets matches in
/// flight finish; [`ShutdownTrigger::abort`] stops them at once and requeues their jobs.
#[derive(Debug)]
pub struct ShutdownTrigger {
    drain: watch::Sender<bool>,
    abort: watch::Sender<bool>,
}

/// The service's side of a [`ShutdownTrigger`].
#[derive(Debug, Clone)]
pub struct Shutdown {
    drain: watch::Receiver<bool>,
    abort: watch::Receiver<bool>,
}

/// A connected trigger and receiver.
pub fn shutdown_channel() -> (ShutdownTrigger, Shutdown) {
    let (drain_tx, drain) = watch::channel(false);
    let (abort_tx, abort) = watch::channel(false);
    (ShutdownTrigger { drain: drain_tx, abort: abort_tx }, Shutdown { drain, abort })
}

impl ShutdownTrigger {
    /// Stop taking jobs; finish the ones in flight.
    pub fn drain(&self) {
        self.drain.send_replace(true);
    }

    /// Stop the matches in flight and requeue their jobs.
    pub fn abort(&self) {
        self.drain.send_replace(true);
        self.abort.send_replace(true);
    }

    /// Drains on the first Ctrl-C or SIGTERM and aborts on the second, from a task
    /// of its own.
    pub fn on_signals(self) -> std::io::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        // Created once: a stream made again per wait could miss a signal in between.
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::spawn(async move {
            for step in 0..2 {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
                if step == 0 {
                    tracing::info!("shutdown requested: draining (a second signal stops matches now)");
                    self.drain();
                } else {
                    tracing::warn!("second signal: stopping matches now");
                    self.abort();
                }
            }
        });
        Ok(())
    }
}

impl Shutdown {
    /// Completes once a drain (or an abort) is asked for.
    pub async fn drained(&mut self) {
        let _ = self.drain.wait_for(|stop| *stop).await;
    }

    /// Completes once an abort is asked for.
    pub async fn aborted(&mut self) {
        let _ = self.abort.wait_for(|stop| *stop).await;
    }

    /// Whether an abort was asked for.
    pub fn is_aborted(&self) -> bool {
        *self.abort.borrow()
    }

    /// Whether a drain (or an abort) was asked for.
    pub fn is_draining(&self) -> bool {
        *self.drain.borrow()
    }

    /// A receiver that turns true once a drain (or an abort) is asked for, for loops
    /// that wait on it themselves.
    pub fn drain_receiver(&self) -> watch::Receiver<bool> {
        self.drain.clone()
    }

    /// A receiver that turns true once an abort is asked for.
    pub fn abort_receiver(&self) -> watch::Receiver<bool> {
        self.abort.clone()
    }
}

import Runnel
import RunnelUV

/// The server's own timer: one repeating timer, once a second, from the moment the server
/// starts serving until its loop shuts down. Every deadline the server keeps in whole seconds
/// is checked by it instead of a timer of its own: `login_timeout` and JWT expiries
/// (`SessionDeadlines`), the HTTP front door's request time limits and its streams'
/// heartbeats. A deadline is then enforced within a second of it, a connection costs no timer
/// handle, and `stats.timers` reads this one timer plus those of the stages (and the few a
/// connection arms while it closes or shakes hands over TLS).
///
/// Thread rules: loop thread only; its closure runs there. Lifetime rule: owned by the server;
/// the loop's shutdown closes the timer (the closure holds the server weakly, so a server gone
/// first is not touched).
package final class ServerSweep {
    package static let interval: Duration = .seconds(1)

    private var timer: Disposable?

    /// Arms the timer, once; `tick` runs on every sweep.
    func start(on scheduler: LoopScheduler, _ tick: @escaping @Sendable () -> Void) {
        scheduler.assertOnLoopThread()
        guard timer == nil else { return }
        timer = scheduler.after(
            scheduler.now.advanced(by: Self.interval), repeatingEvery: Self.interval, leeway: .zero, tick)
    }
}

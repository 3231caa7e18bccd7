import Glibc
import Synchronization

/// The last SIGINT or SIGTERM received, for loops that `poll` with a timeout and check it.
///
/// The handlers, installed with `sigaction` (no `SA_RESTART`, so a blocked `poll` returns with
/// EINTR at once), only store the signal number in a lock-free atomic: async-signal-safe.
enum SignalFlag {
    /// 0 until a handled signal arrives.
    static let received = Atomic<Int32>(0)

    /// Installs the handlers for SIGINT and SIGTERM.
    static func install() {
        _ = received.load(ordering: .relaxed)  // initialise the global before a handler can run
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            SignalFlag.received.store(signal, ordering: .relaxed)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
    }

    /// The received signal, or nil.
    static var pending: Int32? {
        let signal = received.load(ordering: .relaxed)
        return signal == 0 ? nil : signal
    }

    /// Sleeps `seconds`, or less when a handled signal arrives (`nanosleep` is not restarted).
    static func sleep(seconds: Double) {
        var time = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        _ = nanosleep(&time, nil)
    }
}

import Runnel

/// What a connection runs once when it closes (`onClose`): hooks added before the close run
/// then, in order; one added after runs at once.
///
/// Thread rules: `add` from any thread; `run` once, on the connection's loop thread.
final class CloseHooks: Sendable {
    private let hooks = Locked<[@Sendable () -> Void]?>([])

    /// Keeps `hook` for the close, or runs it now if the close has happened.
    func add(_ hook: @escaping @Sendable () -> Void) {
        let added = hooks.withLock { hooks -> Bool in
            guard hooks != nil else { return false }
            hooks!.append(hook)
            return true
        }
        if !added { hook() }
    }

    /// Runs the hooks added so far; later ones run as they are added.
    func run() {
        let toRun = hooks.withLock { hooks -> [@Sendable () -> Void] in
            defer { hooks = nil }
            return hooks ?? []
        }
        for hook in toRun { hook() }
    }
}

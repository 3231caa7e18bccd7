import Logging
import Synchronization

/// What the servers of one process share, one server per event loop that serves sessions
/// (docs/decisions/0011-every-loop-serves-sessions-from-replicas.md): the connections admitted
/// against the process's limits (`admission`) and the numbering of sessions, unique in the
/// process. So neither needs the first loop's help.
///
/// Thread rules: any thread. Lifetime rule: made before its servers, which hold it; it holds
/// none of them.
package final class ServerGroup: Sendable {
    package let admission: ConnectionAdmission
    private let lastSessionID = Atomic<UInt64>(0)

    /// A group under `config`'s connection limits (a reload gives the admission new ones).
    package init(config: ServerConfig, logger: Logger) {
        admission = ConnectionAdmission(config: config, logger: logger)
    }

    /// A session number no other session of the process has had.
    func nextSessionID() -> UInt64 { lastSessionID.add(1, ordering: .relaxed).newValue }
}

import Runnel
import RunnelJSON
import RunnelProtocol

@testable import RunnelServer

/// A subject store whose replies wait for a disk the test drives: a durable store underneath
/// (`fsync = everysec`, so it keeps and delivers at once), but `repliesWaitForDisk` is true
/// and `whenWritten`'s actions wait until `commit(failing:)`, as `fsync = always`'s wait for
/// the writer thread's report. For the session's corked replies without running the loop.
///
/// Thread rules: the test's thread, as the harness's loop. Lifetime rule: holds its durable
/// store and the waiting actions until they run.
final class DiskWaitingStore: WrappedSubjectStore {
    let base: DurableSubjectStore
    private var waiting: [(ProtocolError?) -> Void] = []

    init(_ store: DurableSubjectStore) { base = store }

    /// Runs every waiting action, in order, as the disk reports: with `error` when it failed.
    func commit(failing error: ProtocolError? = nil) {
        let actions = waiting
        waiting = []
        for action in actions { action(error) }
    }

    var repliesWaitForDisk: Bool { true }
    func whenWritten(_ action: @escaping (ProtocolError?) -> Void) { waiting.append(action) }

    func checkShared() throws(ProtocolError) {}
}

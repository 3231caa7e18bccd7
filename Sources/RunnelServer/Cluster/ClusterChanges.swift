import RunnelProtocol

/// The changes a clustered node has asked the cluster for and not yet heard back about
/// (definitions written to the bucket, retained values published to JetStream), and the
/// replies waiting for them: what `ClusterSubjectStore.whenWritten` is made of.
///
/// Each change gets the next number; its outcome comes back in any order (JetStream answers
/// each stream in order, but streams and the bucket apart). A waiter registered after change
/// `n` runs once every change up to `n` is answered, with `n`'s error: the reply it holds is
/// about that change.
///
/// Thread rules: loop thread only. Lifetime rule: owned by its store; holds the waiters'
/// closures until they run.
struct ClusterChanges {
    private var next: UInt64 = 1
    /// Every change below this one is answered.
    private var answeredBelow: UInt64 = 1
    /// Answers that came before an earlier change's.
    private var early: Set<UInt64> = []
    private var errors: [UInt64: ProtocolError] = [:]
    private var waiters: [(after: UInt64, action: (ProtocolError?) -> Void)] = []

    /// Changes begun and not all answered yet: from the first unanswered one to the last.
    var unanswered: Int { Int(next - answeredBelow) }

    /// Numbers a new change.
    mutating func begin() -> UInt64 {
        defer { next += 1 }
        return next
    }

    /// Change `number` was answered, with `error` when it failed. Returns the waiters now due,
    /// with their errors, for the caller to run (they may begin new changes).
    mutating func answer(_ number: UInt64, error: ProtocolError?) -> [() -> Void] {
        assert(number < next && number >= answeredBelow && !early.contains(number), "a change answered twice")
        if let error { errors[number] = error }
        early.insert(number)
        while early.remove(answeredBelow) != nil { answeredBelow += 1 }
        var due: [() -> Void] = []
        while let first = waiters.first, first.after < answeredBelow {
            waiters.removeFirst()
            let error = errors[first.after]
            due.append { first.action(error) }
        }
        // Errors of changes no waiter can still ask about go.
        // (The last change answered keeps its own, for `whenAnswered`.)
        let oldest = min(waiters.first?.after ?? answeredBelow, answeredBelow - 1)
        errors = errors.filter { $0.key >= oldest }
        return due
    }

    /// Keeps `action` to run once the last change begun is answered; when every change is
    /// answered already, returns it instead, for the caller to run at once.
    mutating func whenAnswered(_ action: @escaping (ProtocolError?) -> Void) -> (() -> Void)? {
        let last = next - 1
        guard last >= answeredBelow else {
            let error = errors[last]
            return { action(error) }
        }
        waiters.append((last, action))
        return nil
    }
}

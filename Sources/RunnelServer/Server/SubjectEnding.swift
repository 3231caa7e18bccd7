import RunnelProtocol

/// `complete`, `error` and `delete` of a subject, as a value: the steps that do not depend on
/// who asks (a session of the owner's loop, or one of another loop's, through the owner),
/// written once.
///
/// Thread rules: a value; `apply` on the store's loop.
enum SubjectEnding: Sendable {
    case complete
    case error(message: String)
    case delete

    /// Ends the subject `name` of `store` as asked: `unknown_subject` when there is none,
    /// `terminated` when completing or failing one that has ended, `storage` when a durable
    /// one cannot be written now. Returns whether the reply waits for `store.whenWritten`.
    func apply(to name: String, in store: any SubjectStore) throws(ProtocolError) -> Bool {
        guard let entry = store[name] else { throw ProtocolError(.unknownSubject, "no subject '\(name)'") }
        switch self {
        case .delete:
            if entry.isDurable { try store.checkDurableWrites() }
            store.delete(entry)
        case .complete, .error:
            guard entry.acceptsValues else {
                throw ProtocolError(.terminated, "subject '\(name)' is already terminated")
            }
            if entry.isDurable { try store.checkDurableWrites() }
            if case .error(let message) = self {
                store.terminate(entry, error: ProtocolError(.subjectError, message))
            } else {
                store.terminate(entry, error: nil)
            }
        }
        return store.repliesWait(forChangeOf: entry)
    }
}

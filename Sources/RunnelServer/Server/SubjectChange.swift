import RunnelProtocol

/// What `create`, `complete`, `error` and `delete` ask of the subjects, as a value: read on
/// the loop that received the request, made on the subjects' own loop by one rule, for a
/// session there and for one on another loop alike (decision 0011).
///
/// Thread rules: a value; `apply` on the store's loop.
enum SubjectChange: Sendable {
    case create(SubjectCreation)
    case end(subject: String, SubjectEnding)

    /// Makes the change in `context`'s store (`unavailable` first when a clustered node's link
    /// is down). Returns whether the reply waits for `store.whenWritten`.
    func apply(in context: SessionContext, under settings: SessionSettings) throws(ProtocolError) -> Bool {
        try context.subjects.checkShared()
        switch self {
        case .create(let creation): return try creation.apply(in: context, under: settings)
        case .end(let subject, let ending): return try ending.apply(to: subject, in: context.subjects)
        }
    }
}

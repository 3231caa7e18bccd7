/// The client's mutable part, always behind its mutex: the connection, whether it is set up,
/// the calls waiting for it or for their replies, the live subscriptions, and the final error
/// once the client has stopped.
///
/// Thread rules: only inside `RunnelClient.state.withLock`. Lifetime rule: the client's.
struct ClientState {
    /// A call waiting for its reply.
    enum Pending {
        case call(CheckedContinuation<Result<ServerLine, RunnelError>, Never>)
        /// A `sub`: `answered` runs on the reader thread before any event of the subscription.
        case subscribe(Subscription, sentStart: Bool, CheckedContinuation<Result<ServerLine, RunnelError>, Never>)
        /// A `sub` whose caller's deadline passed before its reply came: a subscription the reply
        /// makes is removed from the server again.
        case abandoned(sid: String)

        /// Who waits for the reply; nil once nobody does.
        var continuation: CheckedContinuation<Result<ServerLine, RunnelError>, Never>? {
            switch self {
            case .call(let continuation), .subscribe(_, _, let continuation): return continuation
            case .abandoned: return nil
            }
        }
    }

    /// The connection being set up or in use; nil between connections.
    var connection: LineSocket?
    /// Its outbox, once it is set up.
    var outbox: Outbox?
    /// Whether `connection` is set up (authenticated, subscriptions made again).
    var ready = false
    /// Set once the client has stopped: `closed`, or the reason it will not reconnect.
    var final: RunnelError?
    var lastDisconnect: RunnelError?
    /// The calls waiting for the connection, by an id of `takeRef`'s (their deadline's timer
    /// removes one).
    var readyWaiters: [Int: CheckedContinuation<Result<Outbox, RunnelError>, Never>] = [:]
    var pending: [Int: Pending] = [:]
    var subscriptions: [String: Subscription] = [:]
    var nextRef = 1
    var nextSid = 1
    /// Whether the reader thread has ended, and who waits for it to.
    var readerEnded = false
    var endWaiters: [CheckedContinuation<Void, Never>] = []

    /// Why the connection a call was made on is gone: the client's final error, else the loss.
    var lostConnection: RunnelError { final ?? lastDisconnect ?? .connectionLost("the connection was lost") }

    mutating func takeRef() -> Int {
        defer { nextRef += 1 }
        return nextRef
    }

    /// The calls waiting for a reply, which the connection's end fails.
    mutating func takePending() -> [CheckedContinuation<Result<ServerLine, RunnelError>, Never>] {
        defer { pending = [:] }
        return pending.values.compactMap(\.continuation)
    }

    /// The calls waiting for the connection, which it being set up or the client stopping ends.
    mutating func takeReadyWaiters() -> [CheckedContinuation<Result<Outbox, RunnelError>, Never>] {
        defer { readyWaiters = [:] }
        return Array(readyWaiters.values)
    }
}

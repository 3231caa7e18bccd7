import RunnelProtocol

/// The server's counters, as `stats` reports them. Loop thread only.
///
/// A class, shared by the server and each of its sessions (`Session.stats`): a session bumps
/// the counters on every delivery through a `let` of its own, so no update retains and
/// releases the server.
package final class ServerStats {
    /// Subscriptions currently held by all connections.
    var subscriptions = 0
    /// Stage chains that several subscriptions have shared (`SharedStageChain` once fanned
    /// out), running now, and the subscriptions they serve now.
    var sharedChains = 0
    var sharedChainSubscriptions = 0
    var published: UInt64 = 0
    var delivered: UInt64 = 0
    var dropped: UInt64 = 0
    var bytesIn: UInt64 = 0
    var bytesOut: UInt64 = 0
    /// Sessions closed by the `disconnect` slow-consumer policy.
    var slowConsumerDisconnects: UInt64 = 0
    /// Connections closed by `login_timeout`.
    var loginTimeouts: UInt64 = 0
    /// TLS sessions that failed or never finished their handshake.
    var tlsFailures: UInt64 = 0
    /// Stage evaluations refused because their connection had spent its
    /// `max_eval_steps_per_second` budget; each ended its subscription with `eval` / "limit".
    var evaluationsRefusedByConnectionBudget: UInt64 = 0
    /// Stage evaluations refused because the publish being fanned out had spent
    /// `max_publish_eval_ms`; each ended its subscription with `eval` / "limit".
    var evaluationsRefusedByPublishBound: UInt64 = 0
    /// Stage evaluations refused because the connection's token had spent its
    /// `token_eval_steps_per_second` budget, over all its connections.
    var evaluationsRefusedByTokenBudget: UInt64 = 0
    /// Error replies to requests, by code, from every front door (stream `error` events are
    /// not counted here).
    private(set) var requestErrors: [ErrorCode: UInt64] = [:]
    /// Answers of the HTTP front door, by status code.
    private(set) var httpResponses: [Int: UInt64] = [:]

    package func countRequestError(_ code: ErrorCode) {
        requestErrors[code, default: 0] &+= 1
    }

    package func countHTTPResponse(status: Int) {
        httpResponses[status, default: 0] &+= 1
    }
}

import RunnelProtocol

/// One server's counters, as `stats` and `/metrics` report them summed over the process's
/// loops (`LoopFigures`, `ServerGroup.gatherFigures`). Loop thread only: another loop gets a
/// copy of `counts`, read on this one.
///
/// A class, shared by the server and each of its sessions (`Session.stats`): a session bumps
/// the counters on every delivery through a `let` of its own, so no update retains and
/// releases the server.
package final class ServerStats {
    /// The counters, one value: what is handed to the loop that sums them.
    var counts = Counts()

    package func countRequestError(_ code: ErrorCode) {
        counts.requestErrors[code, default: 0] &+= 1
    }

    package func countHTTPResponse(status: Int) {
        counts.httpResponses[status, default: 0] &+= 1
    }

    /// The counters. Thread rules: a value.
    struct Counts: Sendable {
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
        fileprivate(set) var requestErrors: [ErrorCode: UInt64] = [:]
        /// Answers of the HTTP front door, by status code.
        fileprivate(set) var httpResponses: [Int: UInt64] = [:]

        /// Adds `other`'s counts (another loop's) to these.
        mutating func add(_ other: Counts) {
            subscriptions += other.subscriptions
            sharedChains += other.sharedChains
            sharedChainSubscriptions += other.sharedChainSubscriptions
            published &+= other.published
            delivered &+= other.delivered
            dropped &+= other.dropped
            bytesIn &+= other.bytesIn
            bytesOut &+= other.bytesOut
            slowConsumerDisconnects &+= other.slowConsumerDisconnects
            loginTimeouts &+= other.loginTimeouts
            tlsFailures &+= other.tlsFailures
            evaluationsRefusedByConnectionBudget &+= other.evaluationsRefusedByConnectionBudget
            evaluationsRefusedByPublishBound &+= other.evaluationsRefusedByPublishBound
            evaluationsRefusedByTokenBudget &+= other.evaluationsRefusedByTokenBudget
            requestErrors.merge(other.requestErrors, uniquingKeysWith: &+)
            httpResponses.merge(other.httpResponses, uniquingKeysWith: &+)
        }
    }
}

import Logging
import Runnel
import RunnelProtocol

/// The process's open client connections, over every listener and every loop, held to
/// `max_connections` and `max_connections_per_address`: a connection is admitted (counted in
/// both) or refused in one step under one lock, so two loops accepting at once cannot both take
/// the last place. Counted whether or not a per-address limit is set, so that setting one on a
/// reload applies to the connections already open. A refusal is counted and logged, at most
/// once a second, so a client hammering a full server cannot flood the log.
///
/// Thread rules: any thread; taken once as a connection opens and once as it closes, never per
/// request or delivery. Lifetime rule: the server group holds it (`ServerGroup.admission`);
/// each admitted connection's closing gives its place back (`release`).
package final class ConnectionAdmission: Sendable {
    private struct State {
        var maxConnections: Int
        var maxPerAddress: Int
        var open = 0
        var byHost: [String: Int] = [:]
        var refused: UInt64 = 0
        /// Refusals since the last warning about them, and when that was.
        var refusedSinceWarning = 0
        var lastWarning: ContinuousClock.Instant?
    }

    private let state: Locked<State>
    private let logger: Logger

    init(config: ServerConfig, logger: Logger) {
        state = Locked(State(maxConnections: config.maxConnections, maxPerAddress: config.maxConnectionsPerAddress))
        self.logger = logger
    }

    /// Takes the limits of a re-read configuration; open connections stay.
    func configure(_ config: ServerConfig) {
        state.withLock {
            $0.maxConnections = config.maxConnections
            $0.maxPerAddress = config.maxConnectionsPerAddress
        }
    }

    /// Connections open now.
    package var openCount: Int { state.withLock { $0.open } }
    /// Connections refused since the start.
    var refusedCount: UInt64 { state.withLock { $0.refused } }

    /// Admits one more connection from the address `host` (`host(of:)`), counting it until
    /// `release(host)`, and returns nil; or returns why not (`max_connections`, or
    /// `max_connections_per_address`), counted as a refusal.
    package func admit(from host: String) -> ProtocolError? {
        let now = ContinuousClock.now
        let (refusal, warnAfter): (ProtocolError?, Int?) = state.withLock { state in
            let refusal: ProtocolError
            if state.open >= state.maxConnections {
                refusal = Self.limitReached(state.maxConnections)
            } else if state.maxPerAddress > 0, state.byHost[host, default: 0] >= state.maxPerAddress {
                refusal = ProtocolError(
                    .limit,
                    "too many connections from \(host): the server allows \(state.maxPerAddress) per address "
                        + "(max_connections_per_address); try again later")
            } else {
                state.open += 1
                state.byHost[host, default: 0] += 1
                return (nil, nil)
            }
            state.refused &+= 1
            state.refusedSinceWarning += 1
            guard state.lastWarning.map({ now - $0 >= .seconds(1) }) ?? true else { return (refusal, nil) }
            let refusedSinceWarning = state.refusedSinceWarning
            state.refusedSinceWarning = 0
            state.lastWarning = now
            return (refusal, refusedSinceWarning)
        }
        if let refusal, let warnAfter {
            logger.warning(
                "refusing connections",
                metadata: ["peer": "\(host)", "reason": "\(refusal.message)", "refused": "\(warnAfter)"])
        }
        return refusal
    }

    /// Gives back the place of a connection `admit(from: host)` admitted, which has closed.
    package func release(_ host: String) {
        state.withLock { state in
            state.open -= 1
            guard let count = state.byHost[host] else {
                assertionFailure("closing a connection from \(host) that was not counted")
                return
            }
            state.byHost[host] = count > 1 ? count - 1 : nil
        }
    }

    /// What a connection refused while the server stops is told: `max_connections`'s refusal.
    package var limitReached: ProtocolError { Self.limitReached(state.withLock { $0.maxConnections }) }

    private static func limitReached(_ maxConnections: Int) -> ProtocolError {
        ProtocolError(
            .limit, "too many connections: the server is at max_connections (\(maxConnections)); try again later")
    }

    /// The host part of a peer's "host:port" or "[v6-host]:port" (the whole text when it has
    /// no port, as a test transport's "memory").
    package static func host(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}

/// Open connections by the client's IP address, over every listener, for
/// `max_connections_per_address`. Counted whether or not the limit is set, so that setting
/// it on a reload applies to the connections already open.
///
/// Loop thread only (`Sendable` only so that a connection's close hook, which runs on the
/// loop, may hold it).
package final class AddressCounts: @unchecked Sendable {
    private var counts: [String: Int] = [:]

    /// Connections open now from `host`.
    func count(_ host: String) -> Int { counts[host, default: 0] }

    package func open(_ host: String) { counts[host, default: 0] += 1 }

    package func close(_ host: String) {
        guard let count = counts[host] else {
            assertionFailure("closing a connection from \(host) that was not counted")
            return
        }
        counts[host] = count > 1 ? count - 1 : nil
    }

    /// The host part of a peer's "host:port" or "[v6-host]:port" (the whole text when it has
    /// no port, as a test transport's "memory").
    package static func host(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}

/// Where a client connects, from its URL: `runnel://HOST[:PORT]` (the line protocol over TCP,
/// port 7455 by default) or `runnels://HOST:PORT` (over TLS); an IPv6 host is in brackets.
///
/// Thread rules: a value, `Sendable`. Lifetime rule: none (a value).
package struct ServerEndpoint: Sendable {
    package static let defaultPort: UInt16 = 7455

    package let host: String
    package let port: UInt16
    package let secure: Bool

    package init(url: String) throws(RunnelError) {
        let rest: Substring
        if url.hasPrefix("runnel://") {
            rest = url.dropFirst("runnel://".count)
            secure = false
        } else if url.hasPrefix("runnels://") {
            rest = url.dropFirst("runnels://".count)
            secure = true
        } else {
            throw RunnelError(
                code: "bad_request", message: "\(url): the URL is runnel://HOST:PORT or runnels://HOST:PORT")
        }
        let authority = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        var portText: Substring?
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            portText = authority[authority.index(after: colon)...]
        } else {
            host = String(authority)
        }
        if let portText {
            guard let port = UInt16(portText), port > 0 else {
                throw RunnelError(code: "bad_request", message: "\(url): the port is 1 to 65535")
            }
            self.port = port
        } else {
            port = Self.defaultPort
        }
        guard !host.isEmpty else { throw RunnelError(code: "bad_request", message: "\(url): no host") }
    }
}

import RunnelProtocol

/// A JWT's expiry: a session whose grant came from a JWT is closed when the token expires
/// (`exp` plus `jwt_leeway`), with `{"ev":"closing","code":"unauthorized","message":"token
/// expired"}`, unless an `auth` with a fresh token moved it to another grant first. The
/// server's sweep watches the instant (`SessionDeadlines`): no timer per connection.
extension Session {
    /// The grant changed: the sweep watches its JWT's expiry, or nothing.
    func watchTokenExpiry() {
        guard let closesAt = grant?.jwt?.closesAt else {
            context.owner.sessionToken(of: self, expiresAt: nil)
            return
        }
        let remaining = closesAt - ProcessStatistics.wallClockSeconds()
        context.owner.sessionToken(of: self, expiresAt: .now + .milliseconds(Int64(max(remaining, 0) * 1000)))
    }

    /// The sweep found the token expired (and has dropped its deadline).
    func tokenExpired() {
        guard !isClosing, let grant, grant.jwt != nil else { return }
        context.logger.info(
            "closing connection: token expired",
            metadata: ["connection": "\(id)", "peer": "\(transport.peerDescription)", "token": "\(grant.source)"])
        close(saying: ProtocolError(.unauthorized, "token expired"), flushingWithin: .seconds(1))
    }
}

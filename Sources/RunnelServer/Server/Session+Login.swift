import Runnel
import RunnelProtocol

/// `login_timeout`: a connection that opens and then sends nothing, or (with tokens
/// configured) never authenticates, would hold a connection slot for ever. Until it has sent a
/// request and is authenticated, the server's sweep watches its deadline (`SessionDeadlines`);
/// past it, the session gets a `closing` line saying why and is closed.
extension Session {
    /// Starts the wait, when the configuration sets a timeout. Called once, as the session opens.
    func startLoginWait() {
        let timeout = settings.config.loginTimeout
        guard timeout > .zero else { return }
        loginWait = timeout
        context.owner.sessionAwaitsLogin(self, until: .now + timeout)
    }

    /// A request was handled: the wait ends once the session is also authenticated.
    @inline(__always)
    func noteRequestForLogin() {
        guard loginWait != nil, grant != nil else { return }
        cancelLoginWait()
    }

    /// Ends the wait without closing (logged in, or closing anyway).
    func cancelLoginWait() {
        guard loginWait != nil else { return }
        loginWait = nil
        context.owner.sessionStoppedAwaitingLogin(self)
    }

    /// The sweep found the deadline passed (and has dropped it).
    func loginTimedOut() {
        guard let timeout = loginWait else { return }
        loginWait = nil
        guard !isClosing else { return }
        let seconds = ServerConfig.renderSeconds(timeout)
        let reason =
            grant != nil
            ? ProtocolError(.limit, "no request within login_timeout (\(seconds) s)")
            : ProtocolError(.unauthorized, "not authenticated within login_timeout (\(seconds) s)")
        stats.counts.loginTimeouts &+= 1
        context.logger.info(
            "closing a connection that did not log in",
            metadata: ["connection": "\(id)", "peer": "\(transport.peerDescription)", "reason": "\(reason.message)"])
        close(saying: reason, flushingWithin: .seconds(1))
    }
}

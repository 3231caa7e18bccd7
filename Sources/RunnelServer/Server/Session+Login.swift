import Runnel

/// `login_timeout`: a connection that opens and then sends nothing, or (with tokens
/// configured) never authenticates, would hold a connection slot for ever. Until it has sent a
/// request and is authenticated, a timer runs; when it fires, the session gets a `closing`
/// line saying why and is closed.
extension Session {
    /// Starts the wait, when the configuration sets a timeout. Called once, as the session opens.
    func startLoginWait() {
        let timeout = server.config.loginTimeout
        guard timeout > .zero else { return }
        let scheduler = server.scheduler
        loginTimer = scheduler.after(scheduler.now.advanced(by: timeout)) { [weak self] in
            self?.loginTimedOut(after: timeout)
        }
    }

    /// A request was handled: the wait ends once the session is also authenticated.
    @inline(__always)
    func noteRequestForLogin() {
        guard loginTimer != nil, grant != nil else { return }
        loginTimer?.dispose()
        loginTimer = nil
    }

    /// Ends the wait without closing (the session is closing anyway).
    func cancelLoginWait() {
        loginTimer?.dispose()
        loginTimer = nil
    }

    private func loginTimedOut(after timeout: Duration) {
        loginTimer = nil
        guard !isClosing else { return }
        let seconds = ServerConfig.renderSeconds(timeout)
        let reason =
            grant != nil
            ? ProtocolError(.limit, "no request within login_timeout (\(seconds) s)")
            : ProtocolError(.unauthorized, "not authenticated within login_timeout (\(seconds) s)")
        stats.loginTimeouts &+= 1
        server.logger.info(
            "closing a connection that did not log in",
            metadata: ["connection": "\(id)", "peer": "\(transport.peerDescription)", "reason": "\(reason.message)"])
        close(saying: reason, flushingWithin: .seconds(1))
    }
}

extension Server {
    /// A TLS session failed or was dropped before its handshake finished: counted for
    /// `/metrics` and logged at debug level (loop thread).
    package func countTLSFailure(_ reason: String) {
        scheduler.assertOnLoopThread()
        stats.counts.tlsFailures &+= 1
        logger.debug("TLS connection failed: \(reason)")
    }
}

import CLibSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A TLS client over a connected, blocking socket that it does not own: for `RunnelClient`'s
/// `LineSocket` (and so the `runnel` CLI), which reads and writes it one thread at a time.
///
/// The handshake runs in `init`, bounded by a timeout (the socket's receive and send timeouts,
/// cleared afterwards), and checks the server's certificate against the trusted CAs and the
/// server name; a failure throws a `TLSError` that says which check failed in plain words.
///
/// Thread rules: one thread at a time. Lifetime rule: frees its `SSL` in `deinit`; the socket
/// stays the caller's to close.
public final class TLSSocketClient {
    private let ssl: OpaquePointer

    /// Connects over `fd`, checking that the server's certificate is valid for `serverName`
    /// (a host name or an IP address).
    public init(fd: Int32, context: TLSContext, serverName: String, timeoutMilliseconds: Int32) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw .fromQueue("cannot create a TLS session") }
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1 else { throw .fromQueue("cannot use the socket for TLS") }
        let isAddress = Self.isIPAddress(serverName)
        // SNI carries host names only; an address is checked against the certificate's IP entries.
        if !isAddress { _ = runnel_ssl_set_host_name(ssl, serverName) }
        let parameters = SSL_get0_param(ssl)
        let accepted =
            isAddress ? X509_VERIFY_PARAM_set1_ip_asc(parameters, serverName) : SSL_set1_host(ssl, serverName)
        guard accepted == 1 else { throw .fromQueue("\(serverName) cannot be checked against a certificate") }
        Self.setTimeouts(fd, milliseconds: timeoutMilliseconds)
        defer { Self.setTimeouts(fd, milliseconds: 0) }
        let status = SSL_connect(ssl)
        guard status == 1 else { throw Self.handshakeFailure(ssl, status: status, serverName: serverName) }
    }

    deinit { SSL_free(ssl) }

    /// The negotiated protocol version, e.g. "TLSv1.3".
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// Whether decrypted bytes are waiting, which `poll` on the socket cannot see.
    public var hasBufferedInput: Bool { SSL_pending(ssl) > 0 }

    /// Sends all of `bytes`, blocking while the socket is full.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TLSError) {
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            let written = SSL_write(ssl, bytes.baseAddress! + offset, Int32(clamping: bytes.count - offset))
            if written <= 0 {
                if SSL_get_error(ssl, written) == SSL_ERROR_SYSCALL && errno == EINTR { continue }
                throw Self.streamFailure(ssl, status: written)
            }
            offset += Int(written)
        }
    }

    /// Reads what is there into `buffer`, blocking until some bytes come. Returns how many;
    /// 0 when the server closed the stream; nil when a signal interrupted the wait.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> Int? {
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if count > 0 { return Int(count) }
        let error = SSL_get_error(ssl, count)
        if error == SSL_ERROR_ZERO_RETURN { return 0 }
        if error == SSL_ERROR_SYSCALL {
            if errno == EINTR { return nil }
            if ERR_peek_error() == 0 { return 0 }
        }
        if error == SSL_ERROR_WANT_READ { return nil }
        throw Self.streamFailure(ssl, status: count)
    }

    /// Sends close_notify (best effort, without waiting for the server's).
    public func shutdown() { _ = SSL_shutdown(ssl) }

    // MARK: Failures in plain words

    private static func handshakeFailure(_ ssl: OpaquePointer, status: Int32, serverName: String) -> TLSError {
        let verification = SSL_get_verify_result(ssl)
        if verification != X509_V_OK {
            ERR_clear_error()
            let detail = String(cString: X509_verify_cert_error_string(verification))
            switch Int32(truncatingIfNeeded: verification) {
            case X509_V_ERR_CERT_HAS_EXPIRED:
                return TLSError("the server's certificate has expired (\(detail))")
            case X509_V_ERR_CERT_NOT_YET_VALID:
                return TLSError("the server's certificate is not valid yet (\(detail))")
            case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
                return TLSError(
                    "the server's certificate is not valid for \(serverName) (\(detail)); --server-name checks another name"
                )
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
                X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE,
                X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
                return TLSError(
                    "the server's certificate is not signed by a trusted CA (\(detail)); --ca-file names the CA to trust"
                )
            default:
                return TLSError("the server's certificate does not verify: \(detail)")
            }
        }
        let failure = streamFailure(ssl, status: status)
        return TLSError("TLS handshake failed: \(failure.message)")
    }

    private static func streamFailure(_ ssl: OpaquePointer, status: Int32) -> TLSError {
        let error = SSL_get_error(ssl, status)
        let systemError = errno
        let reasons = TLSError.drainReasons()
        if !reasons.isEmpty {
            // What OpenSSL says when the other side does not speak TLS at all.
            if reasons.contains("wrong version number") || reasons.contains("packet length too long") {
                return TLSError("\(reasons) (is this a plaintext port? leave out --tls)")
            }
            return TLSError(reasons)
        }
        if error == SSL_ERROR_SYSCALL {
            if systemError == EAGAIN || systemError == EWOULDBLOCK { return TLSError("timed out") }
            if systemError != 0 { return TLSError(String(cString: strerror(systemError))) }
            return TLSError("the server closed the connection")
        }
        return TLSError("TLS error \(error)")
    }

    private static func setTimeouts(_ fd: Int32, milliseconds: Int32) {
        var time = timeval(tv_sec: Int(milliseconds / 1000), tv_usec: Int(milliseconds % 1000) * 1000)
        let size = socklen_t(MemoryLayout<timeval>.size)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, size)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, size)
    }

    private static func isIPAddress(_ text: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, text, &storage) == 1 || inet_pton(AF_INET6, text, &storage) == 1
    }
}

import CLibSSL
import RunnelBytes

/// One TLS connection's state: an OpenSSL `SSL` between two memory BIOs, so that the bytes move
/// through the connection's own libuv reads and writes on its loop, never through a socket
/// OpenSSL holds.
///
/// The connection writes what it read into the input BIO (`receive`), OpenSSL decrypts from it
/// (driving the handshake first); application bytes are encrypted into the output BIO (`seal`,
/// records of up to 16 KiB), which the connection drains to the socket (`takeOutput`). The
/// input BIO holds only what OpenSSL has not consumed yet (at most a partial record), so the
/// memory of a handshake is bounded by OpenSSL's own limits on handshake messages.
///
/// A failure (bad handshake, bad record, a certificate that does not verify) is final: the
/// session reports it once (`TLSContext.onFailure`) and the connection closes after sending the
/// alert OpenSSL queued. A session dropped before its handshake finished (timed out, peer gone)
/// is reported as such when it is freed.
///
/// Thread rules: the connection's loop thread only. Lifetime rule: owned by its connection;
/// `SSL_free` frees both BIOs and drops the session's reference to the `SSL_CTX`.
public final class TLSSession: ConnectionFilter {
    private let ssl: OpaquePointer
    /// The BIO that OpenSSL reads ciphertext from (the peer's bytes); replaced like `output`.
    private var input: OpaquePointer
    /// Bytes written into `input` since it was made.
    private var receivedSinceFreshInput = 0
    /// The BIO that OpenSSL writes ciphertext to (bytes for the peer); replaced by a fresh one
    /// once drained after it held much (see `releaseLargeOutputBuffer`).
    private var output: OpaquePointer
    /// Bytes sealed into `output` since it was made: a bound on the memory it holds, since a
    /// memory BIO keeps its largest allocation however much is read from it.
    private var sealedSinceFreshOutput = 0
    private let context: TLSContext
    public private(set) var isEstablished = false
    /// Set once a failure has been reported.
    private var hasFailed = false

    /// Records are at most 16 KiB of plaintext; decrypted bytes are handed on before the
    /// scratch buffer has less room than that left.
    private static let recordSize = 16 * 1024

    init(context: TLSContext, serverName: String?) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw .fromQueue("cannot create a TLS session") }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .fromQueue("cannot create the TLS session's buffers")
        }
        SSL_set_bio(ssl, input, output)
        self.ssl = ssl
        self.input = input
        self.output = output
        self.context = context
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName {
                _ = runnel_ssl_set_host_name(ssl, serverName)
                guard SSL_set1_host(ssl, serverName) == 1 else { throw .fromQueue("bad server name \(serverName)") }
            }
            // A client speaks first: its ClientHello is output before any input.
            _ = SSL_do_handshake(ssl)
            ERR_clear_error()
        }
    }

    deinit {
        if !isEstablished && !hasFailed { context.onFailure?("handshake not finished (timed out or dropped)") }
        SSL_free(ssl)
    }

    public var handshakeTimeout: Duration { context.handshakeTimeout }

    public func receive(
        _ bytes: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> ConnectionFilterInput {
        guard !hasFailed else { return .failed(reason: "the TLS session has failed") }
        var offset = 0
        while offset < bytes.count {
            let written = BIO_write(input, bytes.baseAddress! + offset, Int32(clamping: bytes.count - offset))
            guard written > 0 else { return fail("cannot buffer TLS input") }
            offset += Int(written)
        }
        receivedSinceFreshInput += bytes.count
        defer { releaseLargeInputBuffer() }
        ERR_clear_error()
        if !isEstablished {
            let status = SSL_do_handshake(ssl)
            guard status == 1 else {
                let error = SSL_get_error(ssl, status)
                if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return .open }
                return fail(describe(error))
            }
            isEstablished = true
        }
        var filled = 0
        while true {
            let status = SSL_read(ssl, scratch.baseAddress! + filled, Int32(clamping: scratch.count - filled))
            if status > 0 {
                filled += Int(status)
                if scratch.count - filled < Self.recordSize {
                    guard deliver(UnsafeRawBufferPointer(rebasing: scratch[0..<filled])) else { return .open }
                    filled = 0
                }
                continue
            }
            let error = SSL_get_error(ssl, status)
            if filled > 0 {
                guard deliver(UnsafeRawBufferPointer(rebasing: scratch[0..<filled])) else { return .open }
            }
            switch error {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .open
            case SSL_ERROR_ZERO_RETURN: return .ended
            default: return fail(describe(error))
            }
        }
    }

    public func seal(_ bytes: UnsafeRawBufferPointer) -> Bool {
        precondition(isEstablished, "application bytes are sealed only after the handshake")
        guard !hasFailed else { return false }
        ERR_clear_error()
        var offset = 0
        while offset < bytes.count {
            // A memory BIO never fills, so a write takes all it is given.
            let written = SSL_write(ssl, bytes.baseAddress! + offset, Int32(clamping: bytes.count - offset))
            guard written > 0 else {
                _ = fail(describe(SSL_get_error(ssl, written)))
                return false
            }
            offset += Int(written)
        }
        sealedSinceFreshOutput += bytes.count
        return true
    }

    public func finish() {
        guard isEstablished, !hasFailed else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    public var pendingOutputCount: Int { Int(BIO_ctrl_pending(output)) }

    public func takeOutput(into target: UnsafeMutableRawBufferPointer) -> Int {
        guard !target.isEmpty else { return 0 }
        let count = max(0, Int(BIO_read(output, target.baseAddress, Int32(clamping: target.count))))
        if sealedSinceFreshOutput > Self.retainedBufferLimit && pendingOutputCount == 0 { releaseLargeOutputBuffer() }
        return count
    }

    /// Bytes through a memory BIO past which its allocation may have grown beyond what an idle
    /// connection should keep.
    private static let retainedBufferLimit = 64 * 1024

    /// Swaps the input BIO for a new one once OpenSSL has taken all of it after it held much
    /// (a read can put up to the loop's whole read buffer there at once).
    private func releaseLargeInputBuffer() {
        guard receivedSinceFreshInput > Self.retainedBufferLimit, BIO_ctrl_pending(input) == 0,
            let fresh = BIO_new(BIO_s_mem())
        else { return }
        SSL_set0_rbio(ssl, fresh)
        input = fresh
        receivedSinceFreshInput = 0
    }

    /// Swaps the drained output BIO for a new, empty one (`SSL_set0_wbio` frees the old), so a
    /// connection that once sent a burst (a replay, a large value) does not keep a buffer of
    /// its size for the rest of its life, as the plaintext path keeps none.
    private func releaseLargeOutputBuffer() {
        guard let fresh = BIO_new(BIO_s_mem()) else { return }
        SSL_set0_wbio(ssl, fresh)
        output = fresh
        sealedSinceFreshOutput = 0
    }

    /// The negotiated protocol version ("TLSv1.3"), for tests and logs.
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    private func fail(_ reason: String) -> ConnectionFilterInput {
        if !hasFailed {
            hasFailed = true
            context.onFailure?(reason)
        }
        return .failed(reason: reason)
    }

    /// OpenSSL's reasons for `error`, with the certificate check's own when that failed.
    private func describe(_ error: Int32) -> String {
        var reason = TLSError.drainReasons()
        let verification = SSL_get_verify_result(ssl)
        if verification != X509_V_OK {
            let text = String(cString: X509_verify_cert_error_string(verification))
            reason = reason.isEmpty ? text : "\(reason) (\(text))"
        }
        if reason.isEmpty { reason = error == SSL_ERROR_SYSCALL ? "unexpected end of stream" : "TLS error \(error)" }
        return reason
    }
}

import CLibSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One OpenSSL `SSL_CTX`: the certificate, key, trusted CAs and version floor that sessions are
/// made from.
///
/// Built whole from files, or not at all (every load is checked, and the key must match the
/// certificate), so a reload either yields a complete new context or an error while the old
/// one keeps serving. Sessions hold the `SSL_CTX` (OpenSSL counts its references), so a context
/// replaced by a reload lives on until its last session closes.
///
/// Thread rules: immutable once built; OpenSSL allows `SSL_new` on one context from any thread.
/// `onFailure` is called on the thread of the failing session (the loop thread).
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// The role of the sessions made from it.
    let isServer: Bool
    /// How long a session's handshake may take before its connection is closed.
    public let handshakeTimeout: Duration
    /// Told why a session failed or never finished its handshake (for a debug log and a count).
    let onFailure: (@Sendable (String) -> Void)?

    private init(
        context: OpaquePointer, isServer: Bool, handshakeTimeout: Duration,
        onFailure: (@Sendable (String) -> Void)?
    ) {
        self.context = context
        self.isServer = isServer
        self.handshakeTimeout = handshakeTimeout
        self.onFailure = onFailure
    }

    deinit { SSL_CTX_free(context) }

    /// A server context: the certificate chain (PEM, the server's first) and its private key;
    /// with `clientCAFile`, clients must present a certificate signed by one of those CAs.
    public static func server(
        certificateFile: String, keyFile: String, clientCAFile: String? = nil, minimumVersion: TLSVersion = .tls12,
        handshakeTimeout: Duration = .seconds(10), onFailure: (@Sendable (String) -> Void)? = nil
    ) throws(TLSError) -> TLSContext {
        ERR_clear_error()
        guard let raw = SSL_CTX_new(TLS_server_method()) else { throw .fromQueue("cannot create a TLS context") }
        let context = TLSContext(
            context: raw, isServer: true, handshakeTimeout: handshakeTimeout, onFailure: onFailure)
        try context.setCommonOptions(minimumVersion: minimumVersion)
        try readable(certificateFile, "tls_cert_file")
        try readable(keyFile, "tls_key_file")
        guard SSL_CTX_use_certificate_chain_file(raw, certificateFile) == 1 else {
            throw .fromQueue("tls_cert_file \(certificateFile) holds no usable PEM certificate")
        }
        // Loading the key also checks it against the certificate ("key values mismatch").
        guard SSL_CTX_use_PrivateKey_file(raw, keyFile, runnel_ssl_filetype_pem) == 1,
            SSL_CTX_check_private_key(raw) == 1
        else {
            throw .fromQueue(
                "tls_key_file \(keyFile) is not a PEM private key of the certificate in \(certificateFile)")
        }
        if let clientCAFile {
            try readable(clientCAFile, "tls_ca_file")
            guard SSL_CTX_load_verify_locations(raw, clientCAFile, nil) == 1,
                let names = SSL_load_client_CA_file(clientCAFile)
            else {
                throw .fromQueue("tls_ca_file \(clientCAFile) holds no usable PEM CA certificate")
            }
            SSL_CTX_set_client_CA_list(raw, names)
            SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
        return context
    }

    /// A client context that verifies the server's certificate against `caFile` (PEM), or the
    /// system's trusted CAs when nil; optionally presenting a certificate of its own.
    public static func client(
        caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
        minimumVersion: TLSVersion = .tls12, handshakeTimeout: Duration = .seconds(10)
    ) throws(TLSError) -> TLSContext {
        ERR_clear_error()
        guard let raw = SSL_CTX_new(TLS_client_method()) else { throw .fromQueue("cannot create a TLS context") }
        let context = TLSContext(context: raw, isServer: false, handshakeTimeout: handshakeTimeout, onFailure: nil)
        try context.setCommonOptions(minimumVersion: minimumVersion)
        if let caFile {
            try readable(caFile, "CA file")
            guard SSL_CTX_load_verify_locations(raw, caFile, nil) == 1 else {
                throw .fromQueue("CA file \(caFile) holds no usable PEM certificate")
            }
        } else if SSL_CTX_set_default_verify_paths(raw) != 1 {
            throw .fromQueue("cannot load the system's trusted CA certificates")
        }
        if let certificateFile, let keyFile {
            try readable(certificateFile, "certificate file")
            try readable(keyFile, "key file")
            guard SSL_CTX_use_certificate_chain_file(raw, certificateFile) == 1,
                SSL_CTX_use_PrivateKey_file(raw, keyFile, runnel_ssl_filetype_pem) == 1,
                SSL_CTX_check_private_key(raw) == 1
            else {
                throw .fromQueue("cannot use the client certificate \(certificateFile) with key \(keyFile)")
            }
        }
        SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nil)
        return context
    }

    /// Options both roles share: the version floor; TLS 1.2 limited to forward-secret AEAD
    /// suites (OpenSSL's default list still has CBC and RSA key exchange; TLS 1.3 has only
    /// suites like these); no renegotiation (a client could make the server redo handshakes at
    /// will); and buffers released while a connection is idle (an idle TLS connection then
    /// holds a few KiB of OpenSSL state, not two 16 KiB records).
    private func setCommonOptions(minimumVersion: TLSVersion) throws(TLSError) {
        guard runnel_ssl_ctx_set_min_version(context, minimumVersion.protocolVersion) == 1 else {
            throw .fromQueue("cannot require TLS \(minimumVersion.rawValue)")
        }
        guard SSL_CTX_set_cipher_list(context, Self.tls12Suites) == 1 else {
            throw .fromQueue("cannot set the TLS 1.2 cipher suites")
        }
        SSL_CTX_set_options(context, runnel_ssl_op_no_renegotiation)
        _ = runnel_ssl_ctx_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))
    }

    /// Throws "cannot read NAME PATH: <strerror>" unless `path` is a readable file, so a missing
    /// or unreadable file gets the system's own words rather than OpenSSL's.
    private static func readable(_ path: String, _ name: String) throws(TLSError) {
        guard let file = fopen(path, "r") else {
            throw TLSError("cannot read \(name) \(path): \(String(cString: strerror(errno)))")
        }
        fclose(file)
    }

    /// The TLS 1.2 suites offered (OpenSSL's cipher-list syntax): ECDHE key exchange with
    /// AES-GCM or ChaCha20-Poly1305, as Mozilla's "intermediate" profile without finite-field DHE.
    static let tls12Suites = "ECDHE+AESGCM:ECDHE+CHACHA20"

    /// A new session for one connection over memory buffers (see `TLSSession`).
    public func makeSession(serverName: String? = nil) throws(TLSError) -> TLSSession {
        try TLSSession(context: self, serverName: serverName)
    }
}

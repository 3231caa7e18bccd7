import RunnelTLS

/// How a client connects with TLS (`runnels://`, `runnel --tls`): which CAs to trust (the
/// system's by default), which name the server's certificate must be valid for, and an optional
/// client certificate.
///
/// Thread rules: a value, `Sendable`. Lifetime rule: none (a value); `makeContext` reads the
/// files each time it is called.
public struct TLSSettings: Sendable {
    public var caFile: String?
    /// The name checked against the certificate; nil: the host connected to.
    public var serverName: String?
    public var certificateFile: String?
    public var keyFile: String?

    public init(
        caFile: String? = nil, serverName: String? = nil, certificateFile: String? = nil, keyFile: String? = nil
    ) {
        self.caFile = caFile
        self.serverName = serverName
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }

    func makeContext() throws(TLSError) -> TLSContext {
        try TLSContext.client(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile)
    }
}

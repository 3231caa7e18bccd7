import RunnelTLS

/// How `runnel --tls` connects: which CAs to trust (the system's by default), which name the
/// server's certificate must be valid for, and an optional client certificate.
struct TLSOptions {
    var caFile: String?
    /// The name checked against the certificate; nil: the host given with `--server`.
    var serverName: String?
    var certificateFile: String?
    var keyFile: String?

    func makeContext() throws(TLSError) -> TLSContext {
        try TLSContext.client(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile)
    }
}

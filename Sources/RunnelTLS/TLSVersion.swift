import CLibSSL

/// The oldest TLS version a context accepts (`tls_min_version`).
public enum TLSVersion: String, Sendable, CaseIterable {
    case tls12 = "1.2"
    case tls13 = "1.3"

    /// OpenSSL's number for the version.
    var protocolVersion: Int32 {
        switch self {
        case .tls12: return runnel_tls1_2_version
        case .tls13: return runnel_tls1_3_version
        }
    }
}

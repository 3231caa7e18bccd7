import CLibSSL

/// A TLS setup or connection failure, with OpenSSL's reasons spelled out.
public struct TLSError: Error, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }

    /// `what` followed by the reasons on this thread's OpenSSL error queue (which it empties),
    /// e.g. "cannot load tls_cert_file /x.pem: No such file or directory".
    static func fromQueue(_ what: String) -> TLSError {
        let reasons = drainReasons()
        return TLSError(reasons.isEmpty ? what : "\(what): \(reasons)")
    }

    /// The reasons on this thread's OpenSSL error queue, oldest first, joined; empties it.
    static func drainReasons() -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let text = ERR_reason_error_string(code) {
                let reason = String(cString: text)
                if !reasons.contains(reason) { reasons.append(reason) }
            } else {
                reasons.append("OpenSSL error \(code)")
            }
        }
        return reasons.joined(separator: "; ")
    }
}

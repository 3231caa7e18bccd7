import RunnelClient

/// Where `runneld` listens, as the user wrote it: `HOST:PORT`, with IPv6 hosts in brackets
/// (`[::1]:7455`), or a URL as the client libraries take it, `runnel://HOST[:PORT]` or
/// `runnels://HOST[:PORT]` (TLS, as `--tls`). Host names are resolved at connect time.
struct ServerAddress: CustomStringConvertible {
    static let defaultText = "127.0.0.1:7455"
    static let environmentName = "RUNNEL_SERVER"

    let host: String
    let port: UInt16
    /// Whether the address asks for TLS (`runnels://`).
    let secure: Bool

    /// Parses `text`; throws a usage failure naming the problem.
    init(parsing text: String) throws(CLIFailure) {
        if let scheme = text.firstRange(of: "://") {
            let name = text[..<scheme.lowerBound]
            guard name == "runnel" || name == "runnels" else {
                throw .usage(
                    "bad server address '\(text)': runnel speaks the line protocol, on runneld's listen port: "
                        + "use HOST:PORT, runnel://HOST:PORT or runnels://HOST:PORT (TLS); "
                        + "ws://, http:// and their TLS forms are for the HTTP port")
            }
            do throws(RunnelError) {
                let endpoint = try ServerEndpoint(url: text)
                (host, port, secure) = (endpoint.host, endpoint.port, endpoint.secure)
            } catch {
                throw .usage("bad server address \(error.message)")
            }
            return
        }
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw .usage("bad server address '\(text)': expected [IPV6]:PORT")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw .usage("bad server address '\(text)': expected HOST:PORT")
            }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw .usage("bad server address '\(text)': empty host") }
        guard let port = UInt16(portPart), port > 0 else {
            throw .usage("bad server address '\(text)': port must be 1 to 65535")
        }
        host = String(hostPart)
        self.port = port
        secure = false
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

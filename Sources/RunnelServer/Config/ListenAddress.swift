#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The address `runneld` listens on: a numeric IPv4 or IPv6 host and a TCP port.
///
/// Written `host:port`, with IPv6 hosts in brackets (`[::1]:7455`). Port 0 asks the system for
/// a free port. Hosts are numeric so binding never waits on name resolution. Immutable value.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The numeric host, without brackets (`127.0.0.1`, `::1`).
    public let host: String
    public let port: UInt16
    public let isIPv6: Bool

    /// The protocol's default: `127.0.0.1:7455`.
    public static let defaultAddress = ListenAddress(host: "127.0.0.1", port: 7455, isIPv6: false)

    /// The HTTP front door's default: `127.0.0.1:7456`.
    public static let defaultHTTPAddress = ListenAddress(host: "127.0.0.1", port: 7456, isIPv6: false)

    private init(host: String, port: UInt16, isIPv6: Bool) {
        self.host = host
        self.port = port
        self.isIPv6 = isIPv6
    }

    /// Parses `host:port`; the error text explains what is wrong, for a `ConfigError`.
    public static func parse(_ text: String) -> Result<ListenAddress, ListenAddressError> {
        let expected = "must be HOST:PORT with a numeric IPv4 host or a bracketed IPv6 host ([::1]:7455)"
        let host: Substring
        let portText: Substring
        let isIPv6: Bool
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"),
                text[text.index(after: close)...].hasPrefix(":")
            else { return .failure(ListenAddressError("\(expected), got \"\(text)\"")) }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            isIPv6 = true
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                return .failure(ListenAddressError("\(expected), got \"\(text)\""))
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            isIPv6 = false
            if host.contains(":") {
                return .failure(ListenAddressError("an IPv6 host must be in brackets ([::1]:7455), got \"\(text)\""))
            }
        }
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(portText), port <= 65535
        else { return .failure(ListenAddressError("the port must be an integer between 0 and 65535, got \"\(text)\"")) }
        guard isNumericHost(String(host), ipv6: isIPv6) else {
            let family = isIPv6 ? "IPv6" : "IPv4"
            return .failure(ListenAddressError("the host must be a numeric \(family) address, got \"\(text)\""))
        }
        return .success(ListenAddress(host: String(host), port: UInt16(port), isIPv6: isIPv6))
    }

    /// Parses `host:port`, or `""` for no address (a listener turned off).
    public static func parseOptional(_ text: String) -> Result<ListenAddress?, ListenAddressError> {
        text.isEmpty ? .success(nil) : parse(text).map { $0 }
    }

    /// `host:port`, bracketing IPv6 hosts: the same text `parse` accepts.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func isNumericHost(_ host: String, ipv6: Bool) -> Bool {
        if ipv6 {
            var address = in6_addr()
            return inet_pton(AF_INET6, host, &address) == 1
        }
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }
}

/// Why a listen address did not parse.
public struct ListenAddressError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

import RunnelServer
import RunnelUV

/// One request's head as `HTTPRequestParser` read it: the method, the target (`/pub/a?x=1`,
/// as sent) and the header fields, with names lower-cased.
///
/// The target and every field live in one byte array, with ranges into it, so a head costs
/// two allocations however many fields it has; values become `String`s only when asked for.
/// An immutable value once built.
public struct HTTPRequestHead {
    public let method: HTTPMethod
    /// Whether the connection may carry another request after this one
    /// (`http_should_keep_alive`: HTTP/1.1 without `Connection: close`, or 1.0 with keep-alive).
    public let keepsAlive: Bool
    /// Whether the client asked to switch protocols (`Upgrade`, or `CONNECT`): the parser stops
    /// after the head, and what follows is not HTTP.
    public let isUpgrade: Bool
    /// Whether a body follows the head (a `Content-Length` over 0, or chunked).
    public let hasBody: Bool
    private let bytes: [UInt8]
    private let targetRange: Range<Int>
    private let fields: [(name: Range<Int>, value: Range<Int>)]

    init(
        method: HTTPMethod, keepsAlive: Bool, isUpgrade: Bool, hasBody: Bool, bytes: [UInt8],
        target: Range<Int>, fields: [(name: Range<Int>, value: Range<Int>)]
    ) {
        self.method = method
        self.keepsAlive = keepsAlive
        self.isUpgrade = isUpgrade
        self.hasBody = hasBody
        self.bytes = bytes
        self.targetRange = target
        self.fields = fields
    }

    /// The request target's path, before any `?`, still percent-encoded.
    public var path: Substring {
        let target = self.target
        return target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
    }

    /// The request target as sent.
    public var target: String { String(decoding: bytes[targetRange], as: UTF8.self) }

    /// The query's parameters, decoded (`+` is a space); nil when it is not valid
    /// percent-encoding of UTF-8.
    public func queryParameters() -> [String: String]? {
        let target = self.target
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        var parameters: [String: String] = [:]
        for pair in target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=")
            guard let name = PercentDecoding.decode(pair[..<(equals ?? pair.endIndex)], plusIsSpace: true),
                let value = PercentDecoding.decode(
                    equals.map { pair[pair.index(after: $0)...] } ?? "", plusIsSpace: true)
            else { return nil }
            // The first of repeated parameters counts, as in most servers.
            if parameters[name] == nil { parameters[name] = value }
        }
        return parameters
    }

    /// The value of the first field named `name` (lower-case), without surrounding spaces.
    public func field(_ name: StaticString) -> String? {
        let wanted = name.rawBytes
        for field in fields where field.name.count == wanted.count {
            if bytes[field.name].elementsEqual(wanted) {
                return String(decoding: bytes[field.value], as: UTF8.self).trimmingSpaces()
            }
        }
        return nil
    }

    /// The values of every field named `name` (lower-case), in order, without surrounding
    /// spaces: a list-valued field may be sent as several (`Sec-WebSocket-Extensions`).
    public func fieldValues(_ name: StaticString) -> [String] {
        let wanted = name.rawBytes
        return fields.filter { $0.name.count == wanted.count && bytes[$0.name].elementsEqual(wanted) }.map {
            String(decoding: bytes[$0.value], as: UTF8.self).trimmingSpaces()
        }
    }

    /// Whether the field named `name` lists `token` (lower-case) among its comma-separated
    /// values, in any case (`Connection: keep-alive, Upgrade` lists `upgrade`).
    public func field(_ name: StaticString, hasToken token: String) -> Bool {
        guard let value = field(name) else { return false }
        return value.split(separator: ",").contains { String($0).trimmingSpaces().lowercased() == token }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

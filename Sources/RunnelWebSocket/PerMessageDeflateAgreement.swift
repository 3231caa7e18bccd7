/// What the server and a client agreed for permessage-deflate (RFC 7692), and the choice of
/// it from the client's `Sec-WebSocket-Extensions` offers (section 7.1): the first
/// `permessage-deflate` offer the server can accept is taken, with the parameters it asked
/// for; an offer with an unknown parameter, a parameter given twice, or a value out of place
/// or out of range is declined (section 7.1: "the server MUST decline"), and so is one asking
/// for `server_max_window_bits=8`, which zlib's raw deflate cannot keep to (it raises 8 to
/// 9). A header that does not parse declines every offer in it. Nothing here fails the
/// handshake: a declined extension leaves an uncompressed WebSocket, which every client
/// accepts.
///
/// The server inflates with a 32 KiB window whatever the client's `client_max_window_bits`
/// (a larger window reads what a smaller one wrote), so the answer never names it.
///
/// Thread rules: an immutable value. Lifetime rule: none (a value).
package struct PerMessageDeflateAgreement: Equatable, Sendable {
    /// The server compresses each message on its own (`server_no_context_takeover`).
    package var serverNoContextTakeover = false
    /// The client compresses each message on its own (`client_no_context_takeover`): the
    /// server's inflater is reset after each message.
    package var clientNoContextTakeover = false
    /// The window the server's deflater uses, 9 to 15 (`server_max_window_bits`, 15 when the
    /// client named none).
    package var serverMaxWindowBits = 15
    /// Whether the client named `server_max_window_bits`: the answer then names it too.
    package var namesServerWindow = false

    /// No parameters: context takeover both ways and a 32 KiB window.
    package init() {}

    /// The extension's token.
    package static let name = "permessage-deflate"

    /// The agreement for the `Sec-WebSocket-Extensions` fields `values` (one string a field,
    /// in order), or nil when none offers permessage-deflate in a form the server accepts.
    package static func negotiate(_ values: [String]) -> PerMessageDeflateAgreement? {
        for value in values {
            guard let offers = ExtensionHeaderParser.parse(value) else { return nil }
            for offer in offers where offer.name.lowercased() == name {
                if let agreement = accept(offer.parameters) { return agreement }
            }
        }
        return nil
    }

    /// The agreement for one offer's parameters, or nil to decline it.
    package static func accept(_ parameters: [(name: String, value: String?)]) -> PerMessageDeflateAgreement? {
        var agreement = PerMessageDeflateAgreement()
        var seen: Set<String> = []
        for (name, value) in parameters {
            let name = name.lowercased()
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
                agreement.serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { return nil }
                agreement.clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let value, let bits = windowBits(value), bits >= 9 else { return nil }
                agreement.serverMaxWindowBits = bits
                agreement.namesServerWindow = true
            case "client_max_window_bits":
                if let value { guard windowBits(value) != nil else { return nil } }
            default:
                return nil
            }
        }
        return agreement
    }

    /// `8` to `15` in decimal without leading zeros (RFC 7692, 7.1.2), else nil.
    private static func windowBits(_ text: String) -> Int? {
        guard let bits = Int(text), String(bits) == text, (8...15).contains(bits) else { return nil }
        return bits
    }

    /// The `Sec-WebSocket-Extensions` value of the server's answer.
    package var responseValue: String {
        var value = Self.name
        if serverNoContextTakeover { value += "; server_no_context_takeover" }
        if clientNoContextTakeover { value += "; client_no_context_takeover" }
        if namesServerWindow { value += "; server_max_window_bits=\(serverMaxWindowBits)" }
        return value
    }
}

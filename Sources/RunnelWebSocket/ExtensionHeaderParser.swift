/// A `Sec-WebSocket-Extensions` value read as RFC 6455 (9.1) writes it: a comma-separated
/// list of extensions, each a token and `;`-separated parameters, each a token with an
/// optional `=` value, a token or a quoted string (whose unquoted text must be a token).
/// Spaces and tabs around the separators are allowed; empty list elements are skipped, as
/// HTTP's `#` rule allows.
///
/// Thread rules: stateless. Lifetime rule: none.
package enum ExtensionHeaderParser {
    /// One extension offered: its name and its parameters in order, as written.
    package struct Offer: Equatable {
        package var name: String
        package var parameters: [(name: String, value: String?)]

        package static func == (left: Offer, right: Offer) -> Bool {
            left.name == right.name && left.parameters.elementsEqual(right.parameters) { $0 == $1 }
        }
    }

    /// The offers in `value`, or nil when it does not follow the grammar.
    package static func parse(_ value: String) -> [Offer]? {
        var scanner = Scanner(bytes: Array(value.utf8))
        var offers: [Offer] = []
        while true {
            scanner.skipSpaces()
            if scanner.atEnd { return offers }
            if scanner.take(UInt8(ascii: ",")) { continue }
            guard let name = scanner.token() else { return nil }
            var offer = Offer(name: name, parameters: [])
            scanner.skipSpaces()
            while scanner.take(UInt8(ascii: ";")) {
                scanner.skipSpaces()
                guard let parameter = scanner.token() else { return nil }
                scanner.skipSpaces()
                var parameterValue: String?
                if scanner.take(UInt8(ascii: "=")) {
                    scanner.skipSpaces()
                    guard let text = scanner.quotedString() ?? scanner.token(), isToken(text) else { return nil }
                    parameterValue = text
                    scanner.skipSpaces()
                }
                offer.parameters.append((parameter, parameterValue))
            }
            offers.append(offer)
            guard scanner.atEnd || scanner.take(UInt8(ascii: ",")) else { return nil }
        }
    }

    private static func isToken(_ text: String) -> Bool { !text.isEmpty && text.utf8.allSatisfy(isTokenByte) }

    /// RFC 7230's `tchar`: visible ASCII but the separators.
    fileprivate static func isTokenByte(_ byte: UInt8) -> Bool {
        guard byte > 0x20, byte < 0x7F else { return false }
        return !"\"(),/:;<=>?@[\\]{}".utf8.contains(byte)
    }

    /// A cursor over the value's bytes.
    private struct Scanner {
        package let bytes: [UInt8]
        package var index = 0

        package var atEnd: Bool { index == bytes.count }

        package mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
                index += 1
            }
        }

        package mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        package mutating func token() -> String? {
            let start = index
            while index < bytes.count, ExtensionHeaderParser.isTokenByte(bytes[index]) { index += 1 }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// A quoted string's text, its `\` escapes undone; nil (and nothing taken) when the
        /// next byte is not `"`, or the string does not end.
        package mutating func quotedString() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            var cursor = index + 1
            var text: [UInt8] = []
            while cursor < bytes.count {
                let byte = bytes[cursor]
                if byte == UInt8(ascii: "\"") {
                    index = cursor + 1
                    return String(decoding: text, as: UTF8.self)
                }
                if byte == UInt8(ascii: "\\") {
                    cursor += 1
                    guard cursor < bytes.count else { return nil }
                }
                text.append(bytes[cursor])
                cursor += 1
            }
            return nil
        }
    }
}

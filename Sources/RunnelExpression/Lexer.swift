/// Splits an expression's source into tokens.
///
/// Works on UTF-8 bytes, so positions are byte offsets. String literals are JSON strings:
/// the escapes `\" \\ \/ \b \f \n \r \t \uXXXX` (surrogate pairs joined), and no raw control
/// characters. Sources are bounded by `maxBytes` before lexing, so the token list is small.
package struct Lexer {
    private let bytes: [UInt8]
    private var index = 0

    package init(_ source: String) {
        bytes = Array(source.utf8)
    }

    /// Every token of the source, ending with `.end`.
    package static func tokens(of source: String) throws(ExpressionError) -> [Token] {
        var lexer = Lexer(source)
        var tokens: [Token] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ offset: Int = 0) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    private static func isNameStart(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_")
    }

    private static func isNameContinue(_ byte: UInt8) -> Bool {
        isNameStart(byte) || (byte >= 0x30 && byte <= 0x39)
    }

    package mutating func next() throws(ExpressionError) -> Token {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        let start = index
        guard let byte = peek() else { return Token(kind: .end, position: start) }

        func single(_ kind: Token.Kind) -> Token {
            index += 1
            return Token(kind: kind, position: start)
        }
        // A one- or two-byte operator: `first` alone, or `pair` when followed by `second`.
        func maybePair(_ second: UInt8, _ pair: Token.Kind, else first: Token.Kind?) throws(ExpressionError) -> Token {
            if peek(1) == second {
                index += 2
                return Token(kind: pair, position: start)
            }
            guard let first else {
                throw .compile("unexpected character '\(Character(Unicode.Scalar(byte)))'", at: start)
            }
            return single(first)
        }

        switch byte {
        case UInt8(ascii: "."): return single(.dot)
        case UInt8(ascii: "["): return single(.leftBracket)
        case UInt8(ascii: "]"): return single(.rightBracket)
        case UInt8(ascii: "("): return single(.leftParen)
        case UInt8(ascii: ")"): return single(.rightParen)
        case UInt8(ascii: "{"): return single(.leftBrace)
        case UInt8(ascii: "}"): return single(.rightBrace)
        case UInt8(ascii: ","): return single(.comma)
        case UInt8(ascii: ":"): return single(.colon)
        case UInt8(ascii: "?"): return single(.question)
        case UInt8(ascii: "+"): return single(.plus)
        case UInt8(ascii: "-"): return single(.minus)
        case UInt8(ascii: "*"): return single(.star)
        case UInt8(ascii: "/"): return single(.slash)
        case UInt8(ascii: "%"): return single(.percent)
        case UInt8(ascii: "!"): return try maybePair(UInt8(ascii: "="), .bangEqual, else: .bang)
        case UInt8(ascii: "="): return try maybePair(UInt8(ascii: "="), .equalEqual, else: nil)
        case UInt8(ascii: "<"): return try maybePair(UInt8(ascii: "="), .lessEqual, else: .less)
        case UInt8(ascii: ">"): return try maybePair(UInt8(ascii: "="), .greaterEqual, else: .greater)
        case UInt8(ascii: "&"): return try maybePair(UInt8(ascii: "&"), .andAnd, else: nil)
        case UInt8(ascii: "|"): return try maybePair(UInt8(ascii: "|"), .orOr, else: nil)
        case UInt8(ascii: "\""): return Token(kind: .string(try string()), position: start)
        case UInt8(ascii: "$"):
            index += 1
            let nameStart = index
            while let next = peek(), Self.isNameContinue(next) { index += 1 }
            guard index > nameStart else { throw .compile("expected a variable name after '$'", at: start) }
            return Token(kind: .variable(String(decoding: bytes[nameStart..<index], as: UTF8.self)), position: start)
        case 0x30...0x39:
            return Token(kind: .number(try number()), position: start)
        default:
            if Self.isNameStart(byte) {
                while let next = peek(), Self.isNameContinue(next) { index += 1 }
                return Token(
                    kind: .identifier(String(decoding: bytes[start..<index], as: UTF8.self)), position: start)
            }
            if byte < 0x80 {
                throw .compile("unexpected character '\(Character(Unicode.Scalar(byte)))'", at: start)
            }
            throw .compile("unexpected character", at: start)
        }
    }

    private mutating func number() throws(ExpressionError) -> Double {
        let start = index
        guard let end = ExpressionNumberSyntax.scan(bytes, from: start, allowSign: false) else {
            throw .compile("malformed number", at: start)
        }
        if end < bytes.count, Self.isNameContinue(bytes[end]) || bytes[end] == UInt8(ascii: ".") {
            throw .compile("malformed number", at: start)
        }
        guard let value = ExpressionNumberSyntax.value(bytes[start..<end]) else {
            throw .compile("number out of range", at: start)
        }
        index = end
        return value
    }

    /// A JSON string literal; `index` is at its opening quote.
    private mutating func string() throws(ExpressionError) -> String {
        let start = index
        index += 1
        var scalars = String.UnicodeScalarView()
        var runStart = index  // bytes copied as-is since the last escape
        func flushRun(_ end: Int) {
            scalars.append(contentsOf: String(decoding: bytes[runStart..<end], as: UTF8.self).unicodeScalars)
        }
        while true {
            guard let byte = peek() else { throw .compile("unterminated string", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                flushRun(index)
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                flushRun(index)
                let escapeStart = index
                guard let escaped = peek(1) else { throw .compile("unterminated string", at: start) }
                index += 2
                switch escaped {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"): scalars.append(try unicodeEscape(at: escapeStart))
                default: throw .compile("invalid escape in string", at: escapeStart)
                }
                runStart = index
            case 0x00..<0x20:
                throw .compile("control character in string", at: index)
            default:
                index += 1
            }
        }
    }

    /// The scalar of a `\uXXXX` escape (index just past the `u`), joining a surrogate pair.
    private mutating func unicodeEscape(at escapeStart: Int) throws(ExpressionError) -> Unicode.Scalar {
        let high = try hexQuad(escapeStart)
        if (0xDC00...0xDFFF).contains(high) { throw .compile("lone surrogate in string", at: escapeStart) }
        guard (0xD800...0xDBFF).contains(high) else { return Unicode.Scalar(high)! }
        guard peek() == UInt8(ascii: "\\"), peek(1) == UInt8(ascii: "u") else {
            throw .compile("lone surrogate in string", at: escapeStart)
        }
        index += 2
        let low = try hexQuad(escapeStart)
        guard (0xDC00...0xDFFF).contains(low) else { throw .compile("lone surrogate in string", at: escapeStart) }
        return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
    }

    private mutating func hexQuad(_ escapeStart: Int) throws(ExpressionError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek() else { throw .compile("invalid \\u escape in string", at: escapeStart) }
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: throw .compile("invalid \\u escape in string", at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}

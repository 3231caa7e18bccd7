/// A subject name or a wildcard pattern, split into tokens.
///
/// `*` matches exactly one token; `>` matches one or more tokens and may only come last. Both
/// stand only as whole tokens. A pattern with no wildcard is a plain subject name.
public struct SubjectPattern: Sendable, Hashable, CustomStringConvertible {
    public enum Token: Sendable, Hashable {
        case literal(Substring)
        case one
        case rest
    }

    public let text: String
    public let tokens: [Token]

    /// Parses `text`, already checked by `SubjectName.validatePattern`.
    public init(_ text: String) {
        self.text = text
        self.tokens = text.split(separator: ".", omittingEmptySubsequences: false).map { token in
            switch token {
            case "*": return .one
            case ">": return .rest
            default: return .literal(token)
            }
        }
    }

    /// The name's start every match shares: the literal tokens before the first wildcard, each
    /// with its `.` (`sensors.` for `sensors.*.temp`); the whole text for a plain name.
    public var literalPrefix: String {
        guard let wildcard = tokens.firstIndex(where: { $0 == .one || $0 == .rest }) else { return text }
        var end = text.startIndex
        for _ in 0..<wildcard { end = text.index(after: text[end...].firstIndex(of: ".")!) }
        return String(text[..<end])
    }

    /// Whether the pattern holds a wildcard.
    public var isWildcard: Bool { tokens.contains { $0 == .one || $0 == .rest } }

    /// Whether `name` (a plain subject name) matches the pattern. Walks the name's bytes in
    /// place (no splitting, no allocation): permission checks call it on `pub`.
    public func matches(_ name: String) -> Bool {
        let utf8 = name.utf8
        var start = utf8.startIndex
        var exhausted = false
        for token in tokens {
            if exhausted { return false }
            let end = utf8[start...].firstIndex(of: UInt8(ascii: ".")) ?? utf8.endIndex
            switch token {
            case .rest:
                return true
            case .one:
                break
            case .literal(let literal):
                guard literal.utf8.elementsEqual(utf8[start..<end]) else { return false }
            }
            if end == utf8.endIndex {
                exhausted = true
            } else {
                start = utf8.index(after: end)
            }
        }
        return exhausted
    }

    /// Whether every name `other` matches, this pattern matches too.
    public func covers(_ other: SubjectPattern) -> Bool {
        for (position, token) in tokens.enumerated() {
            guard position < other.tokens.count else { return false }
            let theirs = other.tokens[position]
            switch token {
            case .rest:
                return true
            case .one:
                // Their `>` matches names longer than this pattern's.
                if theirs == .rest { return false }
            case .literal(let literal):
                guard case .literal(let their) = theirs, their == literal else { return false }
            }
        }
        return other.tokens.count == tokens.count
    }

    /// Whether some name matches both this pattern and `other`.
    public func overlaps(_ other: SubjectPattern) -> Bool {
        for position in 0..<max(tokens.count, other.tokens.count) {
            guard position < tokens.count, position < other.tokens.count else { return false }
            let mine = tokens[position]
            let theirs = other.tokens[position]
            if mine == .rest || theirs == .rest { return true }
            if case .literal(let literal) = mine, case .literal(let their) = theirs, literal != their { return false }
        }
        return true
    }

    public var description: String { text }
}

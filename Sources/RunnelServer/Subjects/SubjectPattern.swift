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

    /// Whether the pattern holds a wildcard.
    public var isWildcard: Bool { tokens.contains { $0 == .one || $0 == .rest } }

    /// Whether `name` (a plain subject name) matches the pattern.
    public func matches(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        for (position, token) in tokens.enumerated() {
            switch token {
            case .rest:
                return parts.count > position
            case .one:
                guard position < parts.count else { return false }
            case .literal(let literal):
                guard position < parts.count, parts[position] == literal else { return false }
            }
        }
        return parts.count == tokens.count
    }

    public var description: String { text }
}

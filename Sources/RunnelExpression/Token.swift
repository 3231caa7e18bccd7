/// One lexical token of an expression, with the UTF-8 byte offset where it starts.
package struct Token: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case dot
        case leftBracket, rightBracket
        case leftParen, rightParen
        case leftBrace, rightBrace
        case comma, colon, question
        case plus, minus, star, slash, percent
        case bang
        case equalEqual, bangEqual
        case less, lessEqual, greater, greaterEqual
        case andAnd, orOr
        /// A number literal, already converted (always finite).
        case number(Double)
        /// A string literal with its JSON escapes already resolved.
        case string(String)
        /// A bare name: a keyword (`true`, `false`, `null`), a function name or a member name.
        case identifier(String)
        /// `$name`, without the dollar sign.
        case variable(String)
        case end
    }

    package let kind: Kind
    package let position: Int

    /// How the token reads in an error message.
    package var spelling: String {
        switch kind {
        case .dot: return "'.'"
        case .leftBracket: return "'['"
        case .rightBracket: return "']'"
        case .leftParen: return "'('"
        case .rightParen: return "')'"
        case .leftBrace: return "'{'"
        case .rightBrace: return "'}'"
        case .comma: return "','"
        case .colon: return "':'"
        case .question: return "'?'"
        case .plus: return "'+'"
        case .minus: return "'-'"
        case .star: return "'*'"
        case .slash: return "'/'"
        case .percent: return "'%'"
        case .bang: return "'!'"
        case .equalEqual: return "'=='"
        case .bangEqual: return "'!='"
        case .less: return "'<'"
        case .lessEqual: return "'<='"
        case .greater: return "'>'"
        case .greaterEqual: return "'>='"
        case .andAnd: return "'&&'"
        case .orOr: return "'||'"
        case .number: return "number"
        case .string: return "string"
        case .identifier(let name): return "'\(name)'"
        case .variable(let name): return "'$\(name)'"
        case .end: return "end of expression"
        }
    }
}

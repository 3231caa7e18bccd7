import RunnelJSON

/// Turns tokens into an `ExpressionNode` tree: recursive descent, one function per precedence
/// level, loosest first.
///
/// Nesting is counted on every entry to `expression()` (the whole source, and each
/// parenthesised group, array item, object value, call argument, bracket index and ternary
/// branch) and on every prefix operator; past `maxDepth` the source is rejected. That bounds
/// the recursion of both this parser and the evaluator. Subexpressions whose operands are all
/// literals are folded into literals here (unless folding raises an error, which then waits
/// for run time so it keeps its position and its `eval` code).
package struct Parser {
    private let tokens: [Token]
    private let variables: Set<String>
    private let maxDepth: Int
    private let clock: ExpressionClock
    private var current = 0
    private var depth = 0
    /// Whether the source reads anything but the input value: a variable (`$subject`
    /// included) or the clock.
    private var readsMoreThanInput = false
    /// Whether it reads anything but the input value and `$subject`.
    private var readsMoreThanInputAndSubject = false
    /// Whether the source reads the input value whole (`.` other than as a path's start).
    private var readsWholeInput = false

    private init(tokens: [Token], variables: Set<String>, maxDepth: Int, clock: @escaping ExpressionClock) {
        self.tokens = tokens
        self.variables = variables
        self.maxDepth = maxDepth
        self.clock = clock
    }

    /// What `parse` finds out about a source besides its tree.
    package struct Parsed {
        package let root: ExpressionNode
        /// No variable, no `now()`: the same result for the same value every time.
        package let dependsOnInputOnly: Bool
        /// No variable but `$subject`, no `now()`: the same result for the same value and subject.
        package let dependsOnInputAndSubjectOnly: Bool
        /// It reads the input value whole rather than only through paths (`.a`, `.[0]`).
        package let readsWholeInput: Bool
    }

    package static func parse(
        _ source: String, variables: Set<String>, maxDepth: Int, clock: @escaping ExpressionClock
    ) throws(ExpressionError) -> Parsed {
        var parser = Parser(
            tokens: try Lexer.tokens(of: source), variables: variables, maxDepth: maxDepth, clock: clock)
        let node = try parser.expression()
        guard parser.peek.kind == .end else { throw parser.unexpected() }
        return Parsed(
            root: node, dependsOnInputOnly: !parser.readsMoreThanInput,
            dependsOnInputAndSubjectOnly: !parser.readsMoreThanInputAndSubject,
            readsWholeInput: parser.readsWholeInput)
    }

    // MARK: Token access

    private var peek: Token { tokens[current] }

    @discardableResult
    private mutating func advance() -> Token {
        let token = tokens[current]
        if token.kind != .end { current += 1 }
        return token
    }

    private mutating func expect(_ kind: Token.Kind, _ spelling: String) throws(ExpressionError) {
        guard peek.kind == kind else {
            throw .compile("expected \(spelling) but found \(peek.spelling)", at: peek.position)
        }
        advance()
    }

    private func unexpected() -> ExpressionError {
        .compile("unexpected \(peek.spelling)", at: peek.position)
    }

    private mutating func enter() throws(ExpressionError) {
        depth += 1
        if depth > maxDepth { throw .compile("expression nested deeper than \(maxDepth)", at: peek.position) }
    }

    // MARK: Precedence levels

    private mutating func expression() throws(ExpressionError) -> ExpressionNode {
        try enter()
        defer { depth -= 1 }
        let condition = try or()
        guard peek.kind == .question else { return condition }
        advance()
        let then = try expression()
        try expect(.colon, "':'")
        let otherwise = try expression()
        return fold(.conditional(condition, then, otherwise))
    }

    private mutating func or() throws(ExpressionError) -> ExpressionNode {
        var operands = [try and()]
        while peek.kind == .orOr {
            advance()
            operands.append(try and())
        }
        return operands.count == 1 ? operands[0] : fold(.or(operands))
    }

    private mutating func and() throws(ExpressionError) -> ExpressionNode {
        var operands = [try comparison()]
        while peek.kind == .andAnd {
            advance()
            operands.append(try comparison())
        }
        return operands.count == 1 ? operands[0] : fold(.and(operands))
    }

    private mutating func comparison() throws(ExpressionError) -> ExpressionNode {
        try chain(next: { parser throws(ExpressionError) in try parser.additive() }) { kind in
            switch kind {
            case .equalEqual: return .equal
            case .bangEqual: return .notEqual
            case .less: return .less
            case .lessEqual: return .lessEqual
            case .greater: return .greater
            case .greaterEqual: return .greaterEqual
            default: return nil
            }
        }
    }

    private mutating func additive() throws(ExpressionError) -> ExpressionNode {
        try chain(next: { parser throws(ExpressionError) in try parser.multiplicative() }) { kind in
            switch kind {
            case .plus: return .add
            case .minus: return .subtract
            default: return nil
            }
        }
    }

    private mutating func multiplicative() throws(ExpressionError) -> ExpressionNode {
        try chain(next: { parser throws(ExpressionError) in try parser.unary() }) { kind in
            switch kind {
            case .star: return .multiply
            case .slash: return .divide
            case .percent: return .remainder
            default: return nil
            }
        }
    }

    /// One left-associative level: `next (op next)*`, stored flat.
    private mutating func chain(
        next: (inout Parser) throws(ExpressionError) -> ExpressionNode,
        operator: (Token.Kind) -> ExpressionBinaryOperator?
    ) throws(ExpressionError) -> ExpressionNode {
        let first = try next(&self)
        var steps: [ExpressionBinaryStep] = []
        while let op = `operator`(peek.kind) {
            let position = advance().position
            steps.append(ExpressionBinaryStep(op: op, operand: try next(&self), position: position))
        }
        return steps.isEmpty ? first : fold(.chain(first, steps))
    }

    private mutating func unary() throws(ExpressionError) -> ExpressionNode {
        switch peek.kind {
        case .bang, .minus:
            let token = advance()
            try enter()
            defer { depth -= 1 }
            let operand = try unary()
            return fold(token.kind == .bang ? .not(operand) : .negate(operand, at: token.position))
        default:
            return try postfix()
        }
    }

    // MARK: Paths and primaries

    private mutating func postfix() throws(ExpressionError) -> ExpressionNode {
        var steps: [ExpressionPathStep] = []
        let base: ExpressionNode
        var startsAtInput = false
        if peek.kind == .dot {
            // `.` alone is the value; `.name` is its first member step.
            let dot = advance()
            base = .input
            startsAtInput = true
            if case .identifier(let name) = peek.kind {
                advance()
                steps.append(.member(JSONMemberName(name), at: dot.position))
            } else if peek.kind == .dot {
                throw unexpected()
            }
        } else {
            base = try primary()
        }
        while true {
            if peek.kind == .dot {
                let dot = advance()
                if case .identifier(let name) = peek.kind {
                    advance()
                    steps.append(.member(JSONMemberName(name), at: dot.position))
                } else if peek.kind != .leftBracket {
                    throw .compile("expected a name or '[' after '.' but found \(peek.spelling)", at: peek.position)
                }
            } else if peek.kind == .leftBracket {
                let bracket = advance()
                let key = try expression()
                try expect(.rightBracket, "']'")
                if case .string(let name)? = key.literalValue {
                    steps.append(.member(JSONMemberName(name), at: bracket.position))
                } else {
                    steps.append(.index(key, at: bracket.position))
                }
            } else {
                break
            }
        }
        if startsAtInput && steps.isEmpty { readsWholeInput = true }
        return steps.isEmpty ? base : fold(.path(base, steps))
    }

    private mutating func primary() throws(ExpressionError) -> ExpressionNode {
        let token = peek
        switch token.kind {
        case .number(let number):
            advance()
            return .literal(.number(number))
        case .string(let string):
            advance()
            return .literal(.string(string))
        case .variable(let name):
            advance()
            readsMoreThanInput = true
            let variable = try resolveVariable(name, at: token.position)
            if variable != .subject { readsMoreThanInputAndSubject = true }
            return .variable(variable)
        case .identifier(let name):
            advance()
            if peek.kind == .leftParen { return try call(name, at: token.position) }
            switch name {
            case "true": return .literal(.bool(true))
            case "false": return .literal(.bool(false))
            case "null": return .literal(.null)
            default:
                throw .compile("unknown name '\(name)' (a member is written '.\(name)')", at: token.position)
            }
        case .leftParen:
            advance()
            let inner = try expression()
            try expect(.rightParen, "')'")
            return inner
        case .leftBracket:
            advance()
            var items: [ExpressionNode] = []
            if peek.kind != .rightBracket {
                items.append(try expression())
                while peek.kind == .comma {
                    advance()
                    items.append(try expression())
                }
            }
            try expect(.rightBracket, "']' or ','")
            return fold(.array(items))
        case .leftBrace:
            advance()
            var members: [ExpressionObjectMember] = []
            if peek.kind != .rightBrace {
                members.append(try objectMember())
                while peek.kind == .comma {
                    advance()
                    members.append(try objectMember())
                }
            }
            try expect(.rightBrace, "'}' or ','")
            return fold(.object(members))
        default:
            throw unexpected()
        }
    }

    /// `"key": e` or `key: e`.
    private mutating func objectMember() throws(ExpressionError) -> ExpressionObjectMember {
        let key: String
        switch peek.kind {
        case .string(let string): key = string
        case .identifier(let name): key = name
        default: throw .compile("expected an object key but found \(peek.spelling)", at: peek.position)
        }
        advance()
        try expect(.colon, "':'")
        return ExpressionObjectMember(key: key, value: try expression())
    }

    private mutating func call(_ name: String, at position: Int) throws(ExpressionError) -> ExpressionNode {
        guard let function = ExpressionFunction.byName[name] else {
            throw .compile("unknown function '\(name)'", at: position)
        }
        advance()  // (
        var arguments: [ExpressionNode] = []
        if peek.kind != .rightParen {
            arguments.append(try expression())
            while peek.kind == .comma {
                advance()
                arguments.append(try expression())
            }
        }
        try expect(.rightParen, "')' or ','")
        guard arguments.count == function.arity else {
            let plural = function.arity == 1 ? "" : "s"
            throw .compile(
                "\(name)() takes \(function.arity) argument\(plural), not \(arguments.count)", at: position)
        }
        if !function.isPure {
            readsMoreThanInput = true
            readsMoreThanInputAndSubject = true
        }
        return fold(ExpressionCallNode(function, arguments, at: position, clock: clock))
    }

    private func resolveVariable(_ name: String, at position: Int) throws(ExpressionError) -> ExpressionVariable {
        let variable: ExpressionVariable
        switch name {
        case "acc": variable = .acc
        case "index": variable = .index
        case "prev": variable = .prev
        case "subject": return .subject
        case "key": return .key
        default:
            guard name.utf8.count == 1, let digit = name.utf8.first, digit >= 0x30, digit <= 0x39 else {
                throw .compile("unknown variable '$\(name)'", at: position)
            }
            guard variables.contains("items") || variables.contains(name) else {
                throw .compile("'$\(name)' is not bound by this stage", at: position)
            }
            return .item(Int(digit - 0x30))
        }
        guard variables.contains(name) else { throw .compile("'$\(name)' is not bound by this stage", at: position) }
        return variable
    }

    // MARK: Constant folding

    /// The node's value when every operand is already a literal and evaluating cannot depend on
    /// the input, bindings or clock; otherwise the node itself.
    private func fold(_ node: ExpressionNode) -> ExpressionNode {
        guard node.isFoldable else { return node }
        do {
            // Under the default budget: a constant too costly to fold stays a node, and pays
            // (or fails) at run time under the stage's own budget.
            var meter = ExpressionMeter(.standard)
            return .literal(try node.evaluate(.tree(.null), ExpressionBindings(), &meter))
        } catch {
            return node
        }
    }
}

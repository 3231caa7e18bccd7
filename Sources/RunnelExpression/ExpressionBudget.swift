import RunnelJSON

/// How much one evaluation of an expression may do: steps of work and bytes of values built.
/// Past either, the evaluation stops with an error of kind `.limit` (a stage reports it as
/// `eval` with the message "limit"), so no single value can stall the server's loop or grow
/// its memory without bound, whatever the expression and the value.
///
/// What counts (see `ExpressionMeter`):
/// - a step for every node evaluated, and for every array item or object member an operation
///   visits, copies or compares (`+` on arrays, `==`, `contains`, `keys`, `len` of an object, a
///   member lookup in an object, `str`, and the size check of a stage's result);
/// - `stepsPerHashedMember` steps for every member of an object whose keys are hashed (`len`
///   and `keys` of an object, `==` on objects with keys in different orders);
/// - a step for every `bytesPerStringStep` bytes of string an operation reads, copies or writes
///   (`+`, `<`, `contains`, `startsWith`, `endsWith`, `len`, `num`, `str`), and for every
///   `bytesPerCaseStep` bytes that `lower` and `upper` map;
/// - as bytes, what the evaluation builds: the UTF-8 of new strings, `MemoryLayout<JSONValue>`
///   per item of a new array or member of a new object, and, for a result a stage sends on, at
///   least the length of its JSON text.
///
/// Costs that are known before an operation runs (the size of a concatenation, a string's
/// length) are charged before it runs, so one huge operation cannot overshoot the budget.
public struct ExpressionBudget: Sendable, Equatable, Hashable {
    /// The most steps one evaluation may take (`max_eval_steps`).
    public var maxSteps: Int
    /// The most bytes one evaluation may build (`max_eval_bytes`).
    public var maxBytes: Int

    /// Enough for any ordinary expression over a message of `max_line_bytes` (1 MiB), which
    /// holds at most about 500,000 values; at what a step costs (bench/README.md, "Figures
    /// behind comments in the code"), this bounds one evaluation to some tens of milliseconds.
    public static let defaultMaxSteps = 1_000_000
    /// 16 MiB: sixteen times the largest default message.
    public static let defaultMaxBytes = 16 * 1024 * 1024

    /// The default budget.
    public static let standard = ExpressionBudget()

    public init(maxSteps: Int = defaultMaxSteps, maxBytes: Int = defaultMaxBytes) {
        self.maxSteps = maxSteps
        self.maxBytes = maxBytes
    }

    /// Bytes of string per step for reading, copying and writing strings.
    public static let bytesPerStringStep = 16
    /// Bytes per step for copying a projection's bytes out whole: what `memcpy` moves in the
    /// time a step of evaluation takes (bench/README.md).
    public static let bytesPerCopyStep = 256
    /// Bytes of string per step for `lower` and `upper` (full Unicode case mapping is slower).
    public static let bytesPerCaseStep = 4
    /// Steps per member for work that hashes an object's keys: `len` and `keys` of an object
    /// (which count distinct keys) and `==` on objects whose keys differ in order.
    public static let stepsPerHashedMember = 8
}

/// What is left of an `ExpressionBudget` during one evaluation: two counters on the stack,
/// passed `inout` through the node tree. Charging is a compare and a subtract; nothing is
/// allocated or locked.
package struct ExpressionMeter {
    package private(set) var stepsLeft: Int
    package private(set) var bytesLeft: Int
    package let budget: ExpressionBudget

    package init(_ budget: ExpressionBudget) {
        self.budget = budget
        stepsLeft = budget.maxSteps
        bytesLeft = budget.maxBytes
    }

    /// The steps taken so far.
    package var stepsUsed: Int { budget.maxSteps - stepsLeft }
    /// The bytes built so far.
    package var bytesUsed: Int { budget.maxBytes - bytesLeft }

    /// One node evaluated.
    @inline(__always) package mutating func step(at position: Int) throws(ExpressionError) {
        guard stepsLeft > 0 else { throw stepLimit(at: position) }
        stepsLeft &-= 1
    }

    /// `count` steps (`count` >= 0), charged before the work they pay for.
    @inline(__always) package mutating func steps(_ count: Int, at position: Int) throws(ExpressionError) {
        guard count <= stepsLeft else { throw stepLimit(at: position) }
        stepsLeft &-= count
    }

    /// `count` steps that are known to be left (`count <= stepsLeft`): for a caller that
    /// answers only when its whole cost fits (`ExpressionMemberComparison`).
    @inline(__always) package mutating func takeSteps(_ count: Int) {
        assert(count >= 0 && count <= stepsLeft, "steps that are left")
        stepsLeft &-= count
    }

    /// The steps for hashing the keys of an object of `memberCount` members.
    @inline(__always) package mutating func hashSteps(_ memberCount: Int, at position: Int) throws(ExpressionError) {
        guard memberCount <= stepsLeft / ExpressionBudget.stepsPerHashedMember else { throw stepLimit(at: position) }
        stepsLeft &-= memberCount &* ExpressionBudget.stepsPerHashedMember
    }

    /// The steps for reading or copying `byteCount` bytes of string.
    @inline(__always) package mutating func stringSteps(_ byteCount: Int, at position: Int) throws(ExpressionError) {
        try steps(byteCount / ExpressionBudget.bytesPerStringStep, at: position)
    }

    /// `count` bytes about to be built (`count` >= 0).
    @inline(__always) package mutating func bytes(_ count: Int, at position: Int) throws(ExpressionError) {
        guard count <= bytesLeft else { throw byteLimit(at: position) }
        bytesLeft &-= count
    }

    /// `count` array items or object members about to be built.
    @inline(__always) package mutating func items(_ count: Int, at position: Int) throws(ExpressionError) {
        guard count <= bytesLeft / Self.itemBytes else { throw byteLimit(at: position) }
        bytesLeft &-= count &* Self.itemBytes
    }

    /// The bytes charged for one array item or object member.
    package static let itemBytes = MemoryLayout<JSONValue>.stride

    /// The deepest a metered walk (`==`, `str`, the size of a result) goes into a value before
    /// it stops with a limit error rather than risk the stack: more than JSON input can hold
    /// (`max_depth` is at most 10,000) plus what an expression can add.
    package static let maxNesting = 16_384

    /// A walk `depth` levels into a value.
    @inline(__always) package func checkNesting(_ depth: Int, at position: Int) throws(ExpressionError) {
        guard depth <= Self.maxNesting else {
            throw ExpressionError(.limit, "value nested deeper than \(Self.maxNesting) levels", at: position)
        }
    }

    /// Charges what a result will cost to write out: a step per value and per
    /// `bytesPerStringStep` bytes of string, and at least its JSON text's length in bytes.
    package mutating func chargeOutput(_ value: JSONValue, depth: Int = 0) throws(ExpressionError) {
        try step(at: 0)
        switch value {
        case .null: try bytes(4, at: 0)
        case .bool(let flag): try bytes(flag ? 4 : 5, at: 0)
        case .number: try bytes(1, at: 0)
        case .string(let string):
            let length = string.utf8.count
            try stringSteps(length, at: 0)
            try bytes(length + 2, at: 0)
        case .array(let items):
            try checkNesting(depth + 1, at: 0)
            try bytes(Swift.max(2, 1 + items.count), at: 0)
            for item in items { try chargeOutput(item, depth: depth + 1) }
        case .object(let object):
            try checkNesting(depth + 1, at: 0)
            try bytes(Swift.max(2, 1 + object.members.count), at: 0)
            for member in object.members {
                let length = member.key.utf8.count
                try stringSteps(length, at: 0)
                try bytes(length + 3, at: 0)
                try chargeOutput(member.value, depth: depth + 1)
            }
        }
    }

    /// Charges what writing out `count` bytes of a published value unchanged will cost (a
    /// projection, `CompiledExpression.project`): a step and a step per `bytesPerCopyStep`
    /// bytes, and the bytes themselves. A tree of the same value charges a step per value
    /// inside it instead; the bytes are copied whole (one `memcpy`), not walked or encoded.
    package mutating func chargeOutput(rawBytes count: Int) throws(ExpressionError) {
        try steps(1 + count / ExpressionBudget.bytesPerCopyStep, at: 0)
        try bytes(count, at: 0)
    }

    package func stepLimit(at position: Int) -> ExpressionError {
        ExpressionError(.limit, "more than \(budget.maxSteps) steps (max_eval_steps)", at: position)
    }

    package func byteLimit(at position: Int) -> ExpressionError {
        ExpressionError(.limit, "more than \(budget.maxBytes) bytes built (max_eval_bytes)", at: position)
    }
}

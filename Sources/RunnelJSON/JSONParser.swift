/// Parses JSON text into a `JSONValue`, with the validator's strictness and depth limit.
///
/// Hand-written on `JSONScanner`: one pass, no recursion (open containers live on a heap
/// stack, so deep input cannot overflow the thread's stack). Numbers become Doubles; a number
/// too large for a Double fails with `numberOutOfRange`, so no decoded value is ever infinite
/// or NaN. Repeated object keys are all kept in `JSONObject.members`; lookups see the last.
/// Stateless and thread-safe.
public struct JSONParser: Sendable {
    public let maxDepth: Int

    public init(maxDepth: Int = JSONLimits.defaultMaxDepth) {
        self.maxDepth = maxDepth
    }

    public func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONError) -> JSONValue {
        var builder = JSONValueBuilder(input: bytes)
        try JSONScanner.scan(bytes, maxDepth: maxDepth, handler: &builder)
        if let failure = builder.failure { throw failure }
        return builder.result ?? .null
    }

    public func parse(_ text: String) throws(JSONError) -> JSONValue {
        var text = text
        return try text.withUTF8 { parseResult(UnsafeRawBufferPointer($0)) }.get()
    }

    public func parse(_ bytes: [UInt8]) throws(JSONError) -> JSONValue {
        try bytes.withUnsafeBytes { parseResult($0) }.get()
    }

    private func parseResult(_ bytes: UnsafeRawBufferPointer) -> Result<JSONValue, JSONError> {
        do throws(JSONError) {
            return .success(try parse(bytes))
        } catch {
            return .failure(error)
        }
    }
}

extension JSONValue {
    /// Parses `text` with the default depth limit.
    public init(parsing text: String) throws(JSONError) {
        self = try JSONParser().parse(text)
    }
}

/// Builds the tree from scanner tokens. Single use; lives only for one `parse` call.
struct JSONValueBuilder: JSONScanHandler {
    private struct Frame {
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: [(key: String, value: JSONValue)] = []
        var key = ""
    }

    private let input: UnsafeRawBufferPointer
    private var frames: [Frame] = []
    private(set) var result: JSONValue?
    private(set) var failure: JSONError?

    init(input: UnsafeRawBufferPointer) {
        self.input = input
    }

    private mutating func add(_ value: JSONValue) {
        guard !frames.isEmpty else {
            result = value
            return
        }
        let top = frames.count - 1
        if frames[top].isObject {
            frames[top].members.append((frames[top].key, value))
        } else {
            frames[top].elements.append(value)
        }
    }

    private func string(_ token: JSONStringToken) -> String {
        JSONStringDecoding.string(
            content: UnsafeRawBufferPointer(rebasing: input[token.content]), hasEscapes: token.hasEscapes)
    }

    mutating func beginObject(at offset: Int, depth: Int) { frames.append(Frame(isObject: true)) }

    mutating func endObject(end: Int, depth: Int) {
        let frame = frames.removeLast()
        add(.object(JSONObject(frame.members)))
    }

    mutating func beginArray(at offset: Int, depth: Int) { frames.append(Frame(isObject: false)) }

    mutating func endArray(end: Int, depth: Int) {
        let frame = frames.removeLast()
        add(.array(frame.elements))
    }

    mutating func key(_ token: JSONStringToken, depth: Int) { frames[frames.count - 1].key = string(token) }

    mutating func string(_ token: JSONStringToken, depth: Int) { add(.string(string(token))) }

    mutating func number(_ token: JSONNumberToken, depth: Int) {
        if let value = JSONNumberDecoding.double(UnsafeRawBufferPointer(rebasing: input[token.range])) {
            add(.number(value))
        } else {
            if failure == nil { failure = JSONError(.numberOutOfRange, at: token.range.lowerBound) }
            add(.null)
        }
    }

    mutating func literal(_ literal: JSONLiteral, range: Range<Int>, depth: Int) {
        switch literal {
        case .true: add(.bool(true))
        case .false: add(.bool(false))
        case .null: add(.null)
        }
    }
}

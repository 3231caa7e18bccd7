import Foundation

/// A parsed JSON value as the tests see it: numbers stay distinct from booleans, and an object
/// key holding `null` stays distinct from an absent key, so replies can be compared exactly.
///
/// Values are immutable and `Sendable`; the literal conformances let a test write an expected
/// reply as `["ok": true, "ref": 1, "receivers": 2]`.
enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// Parses one server line; throws `HarnessError.badJSON` when it is not JSON.
    static func parse(_ text: String) throws -> JSON {
        do {
            return try JSONDecoder().decode(JSON.self, from: Data(text.utf8))
        } catch {
            throw HarnessError.badJSON(text)
        }
    }

    subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    subscript(index: Int) -> JSON? {
        if case .array(let items) = self, items.indices.contains(index) { return items[index] }
        return nil
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    var double: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The number as an `Int` when it is integral.
    var int: Int? {
        if case .number(let n) = self, n.rounded() == n, abs(n) < 9.0e15 { return Int(n) }
        return nil
    }

    var array: [JSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var object: [String: JSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The keys of an object, or an empty set for any other value.
    var keys: Set<String> { Set(object?.keys.map { $0 } ?? []) }

    /// Compact JSON text with sorted keys; used to build requests from values.
    var text: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n):
            if n.rounded() == n && abs(n) < 9.0e15 { return String(Int(n)) }
            return "\(n)"
        case .string(let s): return JSON.quote(s)
        case .array(let items): return "[" + items.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            let body = members.keys.sorted().map { JSON.quote($0) + ":" + members[$0]!.text }
            return "{" + body.joined(separator: ",") + "}"
        }
    }

    private static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension JSON: Decodable {
    init(from decoder: any Decoder) throws {
        if var list = try? decoder.unkeyedContainer() {
            var items: [JSON] = []
            while !list.isAtEnd { items.append(try list.decode(JSON.self)) }
            self = .array(items)
            return
        }
        if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [String: JSON] = [:]
            for key in keyed.allKeys { members[key.stringValue] = try keyed.decode(JSON.self, forKey: key) }
            self = .object(members)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let b = try? single.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? single.decode(Double.self) {
            self = .number(n)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension JSON: CustomStringConvertible {
    var description: String { text }
}

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    init(nilLiteral: ()) { self = .null }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(integerLiteral value: Int) { self = .number(Double(value)) }
    init(floatLiteral value: Double) { self = .number(value) }
    init(stringLiteral value: String) { self = .string(value) }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSON {
    /// `stats.timers` of a serving runneld with no stage timer armed: the sweep of each loop's
    /// server, at the loops the tests run with (`RunneldProcess.testLoops`).
    static var idleTimers: JSON { timers(stages: 0) }

    /// `stats.timers` with `stages` stage timers armed.
    static func timers(stages: Int) -> JSON { .number(Double(Int(RunneldProcess.testLoops)! + stages)) }
}

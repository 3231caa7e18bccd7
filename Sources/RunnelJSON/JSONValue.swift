/// A decoded JSON value: what expressions compute over.
///
/// Values flowing through the server stay as the exact bytes a client published (see
/// `RawJSON`) until a stage needs to look inside; only then are they decoded into this tree.
/// Numbers are IEEE doubles, as the protocol's expression language defines them. Objects keep
/// their members in the order written (output order is stable); lookups see the last member
/// of a repeated key.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The protocol's type name: "null", "boolean", "number", "string", "array", "object".
    public var typeName: String { kind.typeName }

    /// Which of the six kinds of value it is.
    package var kind: JSONKind {
        switch self {
        case .null: return .null
        case .bool: return .boolean
        case .number: return .number
        case .string: return .string
        case .array: return .array
        case .object: return .object
        }
    }

    /// Truthiness for `filter` and friends: `false` and `null` are false, all else true.
    public var isTruthy: Bool {
        switch self {
        case .null, .bool(false): return false
        default: return true
        }
    }
}

/// The six kinds of JSON value, for code that reads a value's kind without its contents (a
/// decoded `JSONValue` or the bytes of one, `JSONValueBytes`).
package enum JSONKind {
    case null, boolean, number, string, array, object

    /// The protocol's type name: "null", "boolean", "number", "string", "array", "object".
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .boolean: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

/// A JSON object's members, in the order they were written.
public struct JSONObject: Sendable, Equatable {
    public private(set) var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)] = []) { self.members = members }

    /// The value of the last member named `key`.
    public subscript(key: String) -> JSONValue? {
        for member in members.reversed() where member.key == key { return member.value }
        return nil
    }

    /// Sets `key`, replacing every earlier member of that name.
    public mutating func set(_ key: String, _ value: JSONValue) {
        members.removeAll { $0.key == key }
        members.append((key, value))
    }

    /// The distinct keys, in first-written order.
    public var keys: [String] {
        var seen = Set<String>()
        return members.compactMap { seen.insert($0.key).inserted ? $0.key : nil }
    }

    public var count: Int { keys.count }

    /// Structural equality: same keys with equal values, whatever their order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        let leftKeys = lhs.keys
        guard leftKeys.count == rhs.keys.count else { return false }
        for key in leftKeys {
            guard let right = rhs[key], lhs[key]! == right else { return false }
        }
        return true
    }
}

/// Why a request line cannot be served, as far as the JSON layer can tell.
///
/// `badJSON`: the line is not JSON, or is JSON but not an object. `badRequest`: valid JSON
/// object, but a field the caller asked for is missing, of the wrong type or out of range.
/// The protocol layer turns these into error replies with the codes `bad_json` and
/// `bad_request`.
public struct RequestError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        case badJSON = "bad_json"
        case badRequest = "bad_request"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

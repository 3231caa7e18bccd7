import CHTTPParser
import RunnelServer

/// A request's method, as far as the front door tells methods apart; every other is `other`
/// (a known path answers it `405`). An immutable value.
public enum HTTPMethod: Equatable, Sendable {
    case get, head, post, put, delete, patch, options, other

    init(parserMethod raw: UInt32) {
        switch raw {
        case HTTP_GET.rawValue: self = .get
        case HTTP_HEAD.rawValue: self = .head
        case HTTP_POST.rawValue: self = .post
        case HTTP_PUT.rawValue: self = .put
        case HTTP_DELETE.rawValue: self = .delete
        case HTTP_PATCH.rawValue: self = .patch
        case HTTP_OPTIONS.rawValue: self = .options
        default: self = .other
        }
    }

    /// The method's token, for `Allow` headers.
    public var name: String {
        switch self {
        case .get: return "GET"
        case .head: return "HEAD"
        case .post: return "POST"
        case .put: return "PUT"
        case .delete: return "DELETE"
        case .patch: return "PATCH"
        case .options: return "OPTIONS"
        case .other: return "OTHER"
        }
    }
}

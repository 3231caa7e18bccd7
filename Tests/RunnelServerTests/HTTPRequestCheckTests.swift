import RunnelProtocol
import Testing

@testable import RunnelHTTP
@testable import RunnelServer

/// The front door's checks one by one, and in their order: a request head in, a decision out
/// (the status, the error code and the extra fields of an answer), no connection needed.
///
/// Thread rules: each test on its own values. Lifetime rule: nothing outlives a test.
@Suite struct HTTPRequestCheckTests {
    /// A route answering `methods`; the checks never start it.
    ///
    /// Thread rules: one test's. Lifetime rule: one test's.
    final class StubRoute: HTTPRoute {
        let methods: [HTTPMethod]
        init(_ methods: [HTTPMethod]) { self.methods = methods }
        func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? { nil }
    }

    /// Keeps the head the parser read.
    ///
    /// Thread rules: one test's. Lifetime rule: one parse's.
    final class HeadReader: HTTPRequestParserDelegate {
        var head: HTTPRequestHead?
        func parserDidBeginRequest() {}
        func parserDidReadHead(_ head: HTTPRequestHead) { self.head = head }
        func parserDidReadBody(_ bytes: UnsafeRawBufferPointer) {}
        func parserDidEndRequest() {}
    }

    /// The head of `"METHOD target"` with `fields` (`"Origin: x"`), as the parser reads it.
    static func head(_ requestLine: String, _ fields: [String] = []) -> HTTPRequestHead {
        let reader = HeadReader()
        let parser = HTTPRequestParser(maxBodyBytes: 1024, delegate: reader)
        let text =
            "\(requestLine) HTTP/1.1\r\nHost: runnel.example:8080\r\n"
            + fields.map { $0 + "\r\n" }.joined() + "\r\n"
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { parser.consume($0) }
        guard let head = reader.head else { preconditionFailure("not a request head: \(text)") }
        return head
    }

    static let grant = TokenGrant.everything(digest: nil, source: "test")

    static func facts(
        _ requestLine: String, _ fields: [String] = [], query: [String: String]? = [:],
        credential: HTTPAccess.Credential = .accepted(HTTPRequestCheckTests.grant),
        route: (any HTTPRoute)? = StubRoute([.get])
    ) -> HTTPRequestFacts {
        HTTPRequestFacts(head: head(requestLine, fields), query: query, credential: credential, route: route)
    }

    /// The answer's status code, error code and extra fields; nil for `.pass`.
    static func answer(_ decision: HTTPCheckDecision) -> (status: Int, code: ErrorCode?, fields: [String: String])? {
        guard case .answer(let response) = decision else { return nil }
        var fields: [String: String] = [:]
        for field in response.fields { fields[field.name.description] = field.value }
        return (response.status.code, response.errorCode, fields)
    }

    @Test func aQueryThatIsNotPercentEncodedUTF8IsABadRequest() {
        #expect(Self.answer(HTTPQueryCheck().decide(Self.facts("GET /stats?a=%ff", query: nil)))?.code == .badRequest)
        #expect(Self.answer(HTTPQueryCheck().decide(Self.facts("GET /stats?a=b", query: ["a": "b"]))) == nil)
    }

    @Test func aRequestNeedsAnAcceptedTokenExceptWhereNoneIsNeeded() {
        let check = HTTPAuthenticationCheck()
        let absent = Self.answer(check.decide(Self.facts("GET /stats", credential: .absent)))
        #expect(absent?.status == 401 && absent?.code == .unauthorized)
        let refused = HTTPAccess.Credential.refused(ProtocolError(.unauthorized, "JWT expired"))
        let wrong = Self.answer(check.decide(Self.facts("GET /stats", credential: refused)))
        #expect(wrong?.status == 401 && wrong?.code == .unauthorized)
        #expect(Self.answer(check.decide(Self.facts("POST /healthz", credential: .absent)))?.status == 401)
        #expect(Self.answer(check.decide(Self.facts("GET /stats"))) == nil)
        for open in [
            "GET /healthz", "HEAD /healthz", "GET /", "HEAD /", "GET /runnel.js", "HEAD /runnel.js", "OPTIONS /pub/a",
        ] {
            #expect(Self.answer(check.decide(Self.facts(open, credential: refused))) == nil, "\(open)")
        }
        // A WebSocket may authenticate with its first message, but not after a wrong token.
        #expect(Self.answer(check.decide(Self.facts("GET /ws", credential: .absent))) == nil)
        #expect(Self.answer(check.decide(Self.facts("GET /ws", credential: refused)))?.status == 401)
    }

    @Test func theStaticFilesAreReadWithoutAToken() {
        let harness = SessionHarness { $0.httpStaticDir = "/nonexistent" }
        let route = StaticFilesRoute(server: harness.server)
        let check = HTTPAuthenticationCheck()
        for open in ["GET /team/index.html", "HEAD /app.js"] {
            #expect(Self.answer(check.decide(Self.facts(open, credential: .absent, route: route))) == nil, "\(open)")
        }
        #expect(Self.answer(check.decide(Self.facts("POST /app.js", credential: .absent, route: route)))?.status == 401)
        #expect(Self.answer(check.decide(Self.facts("GET /app.js", credential: .absent)))?.status == 401)
    }

    @Test func aRefusedOriginIsNamedOnceAndAtMostOneOriginASecond() {
        var hints = OriginRefusalHints()
        let start = ContinuousClock.now
        func named(_ origin: String, after elapsed: Duration) -> Bool {
            hints.shouldName(origin, at: start + elapsed)
        }
        #expect(named("https://a.example", after: .zero))
        #expect(!named("https://a.example", after: .seconds(5)))
        // Another origin within the second waits for a later request of its.
        #expect(!named("https://b.example", after: .milliseconds(500)))
        #expect(named("https://b.example", after: .seconds(1)))
        #expect(!named("https://b.example", after: .seconds(9)))
        // Past its capacity the memory starts over, so it stays bounded.
        for index in 0..<OriginRefusalHints.capacity {
            #expect(named("https://\(index).example", after: .seconds(10 + index)))
        }
        #expect(named("https://a.example", after: .seconds(9999)))
    }

    @Test func theHintSaysWhatToDoAboutTheOrigin() {
        #expect(
            OriginRefusalHints.hint(for: "https://app.example")
                == "refused a request from origin https://app.example: add it to http_allowed_origins to allow it")
        #expect(OriginRefusalHints.hint(for: "null")?.contains("from http_static_dir") == true)
        let long = "https://" + String(repeating: "a", count: OriginRefusalHints.maxOriginBytes) + ".example"
        for unnamed in ["file://", "not an origin", "https://a.example/path", long] {
            #expect(OriginRefusalHints.hint(for: unnamed) == nil, "\(unnamed)")
        }
    }

    @Test func aPathWithoutARouteIsNotFoundAndAnotherMethodNotAllowed() {
        let check = HTTPRouteCheck()
        let missing = Self.answer(check.decide(Self.facts("GET /nothing", route: nil)))
        #expect(missing?.status == 404 && missing?.code == .notFound)
        let wrong = Self.answer(check.decide(Self.facts("DELETE /pub/a", route: StubRoute([.post]))))
        #expect(wrong?.status == 405 && wrong?.code == .methodNotAllowed)
        #expect(wrong?.fields["Allow"] == "POST, OPTIONS")
        #expect(Self.answer(check.decide(Self.facts("POST /pub/a", route: StubRoute([.post])))) == nil)
        #expect(Self.answer(check.decide(Self.facts("OPTIONS /pub/a", route: StubRoute([.post])))) == nil)
    }

    @Test func aPreflightIsAnsweredWithTheCORSFieldsOnlyForAnAllowedOrigin() {
        let check = HTTPPreflightCheck(allowedOrigins: ["https://app.example"])
        let route = StubRoute([.post])
        let allowed = Self.answer(
            check.decide(Self.facts("OPTIONS /pub/a", ["Origin: https://app.example"], route: route)))
        #expect(allowed?.status == 204 && allowed?.code == nil)
        #expect(allowed?.fields["Access-Control-Allow-Methods"] == "POST, OPTIONS")
        #expect(allowed?.fields["Access-Control-Allow-Headers"] == "Authorization, Content-Type")
        #expect(allowed?.fields["Access-Control-Max-Age"] == "600")
        let other = Self.answer(
            check.decide(Self.facts("OPTIONS /pub/a", ["Origin: https://evil.example"], route: route)))
        #expect(other?.status == 204 && other?.fields.isEmpty == true)
        #expect(
            Self.answer(check.decide(Self.facts("POST /pub/a", ["Origin: https://app.example"], route: route))) == nil)
    }

    @Test func aChangeFromAnotherSitesPageIsForbidden() {
        let check = HTTPOriginCheck(allowedOrigins: ["https://app.example"])
        let foreign = Self.answer(check.decide(Self.facts("POST /pub/a", ["Origin: https://evil.example"])))
        #expect(foreign?.status == 403 && foreign?.code == .forbiddenOrigin)
        let upgrade = Self.answer(
            check.decide(
                Self.facts(
                    "GET /ws", ["Origin: https://evil.example", "Connection: Upgrade", "Upgrade: websocket"])))
        #expect(upgrade?.code == .forbiddenOrigin)
        for fields in [[], ["Origin: https://app.example"], ["Origin: http://runnel.example:8080"]] {
            #expect(Self.answer(check.decide(Self.facts("POST /pub/a", fields))) == nil, "\(fields)")
        }
        // Reading is not changing: the CORS fields decide what the page may read.
        #expect(Self.answer(check.decide(Self.facts("GET /stats", ["Origin: https://evil.example"]))) == nil)
    }

    @Test func theFrontDoorsOrderDecidesWhichAnswerWins() {
        let checks = HTTPRequestChecks.frontDoor(allowedOrigins: [])
        // A bad query before anything; a stranger learns nothing of the paths.
        #expect(Self.answer(checks.decide(Self.facts("GET /x?%ff", query: nil, credential: .absent)))?.status == 400)
        #expect(Self.answer(checks.decide(Self.facts("GET /nothing", credential: .absent, route: nil)))?.status == 401)
        // A preflight needs no token, but a path; its method is not checked, its origin not refused.
        #expect(
            Self.answer(checks.decide(Self.facts("OPTIONS /nothing", credential: .absent, route: nil)))?.status == 404)
        let preflight = Self.answer(
            checks.decide(
                Self.facts(
                    "OPTIONS /pub/a", ["Origin: https://evil.example"], credential: .absent,
                    route: StubRoute([.post]))))
        #expect(preflight?.status == 204)
        // A wrong method before a wrong origin; a request every check lets through reaches its route.
        #expect(
            Self.answer(checks.decide(Self.facts("POST /stats", ["Origin: https://evil.example"])))?.status == 405)
        #expect(Self.answer(checks.decide(Self.facts("GET /stats", ["Origin: https://evil.example"]))) == nil)
    }
}

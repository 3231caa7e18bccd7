import Runnel
import RunnelExpression
import RunnelJSON
import RunnelProtocol
import Testing

@testable import RunnelServer

@Suite struct StagePayloadTests {
    @Test func publishedBytesStayExactAndDecodeOnce() throws {
        let payload = Payload(raw: try RawJSON(validating: #"{"a" : 1.0}"#))
        #expect(payload.raw.description == #"{"a" : 1.0}"#)
        let first = try payload.decoded()
        #expect(first == .object(JSONObject([("a", .number(1))])))
        #expect(payload.raw.description == #"{"a" : 1.0}"#)
    }

    @Test func computedValueIsEncodedOnceAndShared() {
        let payload = Payload(computed: .array([.number(2), .string("x")]))
        let first = payload.raw
        #expect(first.description == #"[2,"x"]"#)
        #expect(payload.raw.buffer.isSameBuffer(as: first.buffer))
    }

    @Test func aProjectionOfMostOfAValueSharesItsBuffer() throws {
        let json = #"{"load":0.95,"p":"~T123~xxxxxxxxxxxxxxxxxxxxxxxx"}"#
        let source = Payload(raw: try RawJSON(validating: json))
        let whole = try #require(source.publishedBytes)
        // The `"~T...` string, up to the closing brace.
        let range = (try #require(Array(json.utf8).firstIndex(of: UInt8(ascii: "~"))) - 1)..<(json.utf8.count - 1)
        let slice = Payload.projection(range, of: source)
        let bytes = try #require(slice.publishedBytes)
        #expect(
            bytes.baseAddress == whole.baseAddress! + range.lowerBound, "the slice points into the published buffer")
        #expect(slice.raw.description == #""~T123~xxxxxxxxxxxxxxxxxxxxxxxx""#)
        #expect(try slice.decoded() == .string("~T123~xxxxxxxxxxxxxxxxxxxxxxxx"))
        #expect(slice.isEquivalent(to: Payload(raw: try RawJSON(validating: #""~T123~xxxxxxxxxxxxxxxxxxxxxxxx""#))))
        #expect(!slice.isEquivalent(to: source))
        // A projection of the slice: its range is into the slice's own bytes.
        let inner = Payload.projection(0..<bytes.count, of: slice)
        #expect(inner.publishedBytes?.baseAddress == bytes.baseAddress)
        #expect(inner.raw.description == slice.raw.description)
    }

    @Test func aProjectionOfASmallPartOfAValueIsACopy() throws {
        let json = #"{"a":1,"padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#
        let source = Payload(raw: try RawJSON(validating: json))
        let whole = try #require(source.publishedBytes)
        let slice = Payload.projection(5..<6, of: source)
        let bytes = try #require(slice.publishedBytes)
        #expect(
            bytes.baseAddress! < whole.baseAddress! || bytes.baseAddress! >= whole.baseAddress! + whole.count,
            "a small slice does not keep the large buffer")
        #expect(slice.raw.description == "1")
        #expect(try slice.decoded() == .number(1))
    }

    @Test func twoSubscribersShareOnePayload() throws {
        // Both chains see the very same payload object, so the second filter finds it decoded.
        let source = Subject<Message>()
        let seen = Locked<[Payload]>([])
        let filter = try StageHarness().compiler().compile(
            [.object(JSONObject([("op", .string("filter")), ("expr", .string(". > 1"))]))], source: source)
        ImmediateScheduler.shared.performAsCurrent {
            _ = filter.subscribe(next: { message in seen.withLock { $0.append(message.value) } })
            _ = filter.subscribe(next: { message in seen.withLock { $0.append(message.value) } })
        }
        source.sendNext(Message(label: SubjectLabel("s"), raw: try RawJSON(validating: "2")))
        let payloads = seen.withLock { $0 }
        #expect(payloads.count == 2 && payloads[0] === payloads[1])
    }

    @Test func twoSubscribersShareOneMapResult() throws {
        // Two chains compiled separately by one compiler's interner (one expression object,
        // as in a server): the map runs once per published value and both lines carry the
        // same encoded payload.
        let source = Subject<Message>()
        let seen = Locked<[Payload]>([])
        let stages: [JSONValue] = [
            .object(JSONObject([("op", .string("filter")), ("expr", .string(".n > 1"))])),
            .object(JSONObject([("op", .string("map")), ("expr", .string("{\"m\": .n * 10}"))])),
        ]
        let harness = StageHarness()
        let first = try harness.compiler().compile(stages, source: source)
        let second = try harness.compiler().compile(stages, source: source)
        ImmediateScheduler.shared.performAsCurrent {
            _ = first.subscribe(next: { message in seen.withLock { $0.append(message.value) } })
            _ = second.subscribe(next: { message in seen.withLock { $0.append(message.value) } })
        }
        for n in [1, 2, 3] {
            source.sendNext(Message(label: SubjectLabel("s"), raw: try RawJSON(validating: "{\"n\":\(n)}")))
        }
        let payloads = seen.withLock { $0 }
        #expect(payloads.map(\.raw.description) == [#"{"m":20}"#, #"{"m":20}"#, #"{"m":30}"#, #"{"m":30}"#])
        #expect(payloads.count == 4 && payloads[0] === payloads[1] && payloads[2] === payloads[3])
        #expect(payloads[0] !== payloads[2])
    }

    @Test func onlyExpressionsOfTheValueAndSubjectAreShared() throws {
        #expect(try Expression.compile(".a.b + 1", variables: []).dependsOnInputOnly)
        #expect(try Expression.compile("len(.) > 2 ? upper(.x) : null", variables: []).dependsOnInputOnly)
        #expect(try !Expression.compile("$subject", variables: []).dependsOnInputOnly)
        #expect(try Expression.compile("$subject + .x", variables: []).dependsOnInputAndSubjectOnly)
        #expect(try !Expression.compile(". > now()", variables: []).dependsOnInputAndSubjectOnly)
        #expect(try !Expression.compile("$acc + .", variables: ["acc"]).dependsOnInputAndSubjectOnly)

        let payload = Payload(raw: try RawJSON(validating: #"{"a":{"b":1}}"#))
        let cpu = SubjectLabel("cpu")
        var runs = 0
        let pure = try Expression.compile(".a.b + 1", variables: [])
        let pureAgain = try Expression.compile(".a.b + 1", variables: [])
        let once = try payload.memoized(pure, label: cpu) {
            () throws(ProtocolError) -> Result<Payload, ExpressionError> in
            runs += 1
            return .success(Payload(computed: .number(2)))
        }.get()
        let twice = try payload.memoized(pureAgain, label: SubjectLabel("other")) {
            () throws(ProtocolError) -> Result<Payload, ExpressionError> in
            runs += 1
            return .success(Payload(computed: .number(2)))
        }.get()
        #expect(once === twice && runs == 1)
        // `$subject` is shared for one subject, computed again for another.
        let bySubject = try Expression.compile("$subject", variables: [])
        for label in [cpu, cpu, SubjectLabel("mem")] {
            _ = try payload.memoized(bySubject, label: label) {
                () throws(ProtocolError) -> Result<Payload, ExpressionError> in
                runs += 1
                return .success(Payload(computed: .string(label.name)))
            }
        }
        #expect(runs == 3)
        // `now()` is never shared.
        let clocked = try Expression.compile("now()", variables: [])
        for _ in 0..<2 {
            _ = try payload.memoized(clocked, label: cpu) {
                () throws(ProtocolError) -> Result<Payload, ExpressionError> in
                runs += 1
                return .success(Payload(computed: .number(1)))
            }
        }
        #expect(runs == 5)
    }

    @Test func moreThanTwoExpressionsEachKeepTheirOutcome() throws {
        let payload = Payload(raw: try RawJSON(validating: #"{"a":1}"#))
        let label = SubjectLabel("s")
        let expressions = try (0..<PayloadMemos.maxMemos).map { try Expression.compile(".a + \($0)", variables: []) }
        var runs = 0
        for _ in 0..<2 {
            for expression in expressions {
                _ = try payload.memoized(expression, label: label) {
                    () throws(ProtocolError) -> Result<Payload, ExpressionError> in
                    runs += 1
                    return .success(Payload(computed: .null))
                }
            }
        }
        #expect(runs == PayloadMemos.maxMemos)
        // One more forgets the oldest extra one (the third), not the inline two.
        let extra = try Expression.compile(".a + 100", variables: [])
        for expression in [extra, expressions[0], expressions[1], expressions[2]] {
            _ = try payload.memoized(expression, label: label) {
                () throws(ProtocolError) -> Result<Payload, ExpressionError> in
                runs += 1
                return .success(Payload(computed: .null))
            }
        }
        #expect(runs == PayloadMemos.maxMemos + 2)
    }

    @Test func identicalExpressionsCompileToOneSharedObject() throws {
        let interner = ExpressionInterner(clock: { 0 })
        let first = try interner.compile(".load > 0.9", variables: [], maxBytes: 100, budget: .standard)
        #expect(try interner.compile(".load > 0.9", variables: [], maxBytes: 100, budget: .standard) === first)
        #expect(try interner.compile(".load > 0.9", variables: ["acc"], maxBytes: 100, budget: .standard) !== first)
        #expect(
            try interner.compile(".load > 0.9", variables: [], maxBytes: 100, budget: ExpressionBudget(maxSteps: 9))
                !== first)
        #expect(throws: ExpressionError.self) {
            try interner.compile(".load > 0.9", variables: [], maxBytes: 5, budget: .standard)
        }
        // Released once no chain holds it.
        _ = try interner.compile("1 + .x", variables: [], maxBytes: 100, budget: .standard)
        #expect(interner.count == 4)
        interner.releaseUnused()
        #expect(interner.count == 1)
        #expect(try interner.compile(".load > 0.9", variables: [], maxBytes: 100, budget: .standard) === first)
    }

    /// A full table of expressions in use is not swept on every compile (each sweep visits
    /// every entry), but after half its size in compiles; what was let go meanwhile goes then.
    @Test func aFullTableIsSweptOnlyEveryHalfItsSizeInCompiles() throws {
        let interner = ExpressionInterner(clock: { 0 })
        func compile(_ k: Int) throws -> CompiledExpression {
            try interner.compile(".x + \(k)", variables: [], maxBytes: 100, budget: .standard)
        }
        // Full, then one more compile: its sweep finds every entry in use.
        var held = try (0...ExpressionInterner.capacity).map(compile)
        #expect(interner.count == ExpressionInterner.capacity)
        let sweepsWhenFull = interner.sweeps
        held += try (1..<100).map { try compile(ExpressionInterner.capacity + $0) }
        #expect(interner.sweeps == sweepsWhenFull, "99 compiles past a full table: no sweep")
        held.removeAll()
        for k in 100...(ExpressionInterner.capacity / 2) { _ = try compile(ExpressionInterner.capacity + k) }
        #expect(interner.sweeps == sweepsWhenFull + 1)
        // The sweep made room: a new expression is shared again.
        #expect(interner.count < ExpressionInterner.capacity)
        #expect(try compile(1) === compile(1))
    }

    @Test func aPatternSubscriptionsSubjectIsNeverTakenFromAnotherSubject() throws {
        // mapReplace hands every message the same payload; `$subject` must still be read from
        // each message, never remembered on the shared payload.
        let h = try StageHarness().run(
            #"[{"op":"mapReplace","value":1},{"op":"map","expr":"[$subject, . + 1]"}]"#)
        let zero = try RawJSON(validating: "0")
        h.scheduler.performAsCurrent {
            h.source.sendNext(Message(label: SubjectLabel("a"), raw: zero))
            h.source.sendNext(Message(label: SubjectLabel("b"), raw: zero))
        }
        #expect(h.take() == [#"a ["a",2]"#, #"b ["b",2]"#])
    }

    @Test func equivalenceIsStructural() throws {
        let one = Payload(raw: try RawJSON(validating: "1"))
        let oneAgain = Payload(raw: try RawJSON(validating: "1.0"))
        let two = Payload(computed: .number(2))
        #expect(one.isEquivalent(to: oneAgain))
        #expect(!one.isEquivalent(to: two))
        #expect(Payload(computed: .number(1)).isEquivalent(to: one))
    }

    @Test func rawArrayConcatenatesBytes() throws {
        let array = RawArray.of([
            Payload(raw: try RawJSON(validating: "1.50")), Payload(computed: .string("é")),
        ])
        #expect(array.raw.description == #"[1.50,"é"]"#)
        #expect(try array.decoded() == .array([.number(1.5), .string("é")]))
    }

    @Test func stagesThatDoNotLookAtValuesNeverDecode() throws {
        let h = try StageHarness().run(
            #"[{"op":"take","count":5},{"op":"skip","count":1},{"op":"delay","seconds":1},{"op":"merge","subjects":["b"]},{"op":"throttle","seconds":1},{"op":"takeLast","count":3},{"op":"collect"}]"#
        )
        let payloads = try ["1", "2", "3"].map { Payload(raw: try RawJSON(validating: $0)) }
        h.scheduler.performAsCurrent {
            for payload in payloads { h.source.sendNext(Message(label: h.sourceLabel, value: payload)) }
        }
        h.complete()
        h.complete("b")
        h.advance(2)
        #expect(h.values() == ["[3]", "completed"])  // 2 and 3 arrive together: throttled to 3
        #expect(payloads.allSatisfy { !$0.isDecoded })
    }

    @Test func aFilterDecodesAndTheNextSubscriberFindsTheTree() throws {
        let payload = Payload(raw: try RawJSON(validating: "2"))
        let source = Subject<Message>()
        let chain = try StageHarness().compiler().compile(
            [.object(JSONObject([("op", .string("filter")), ("expr", .string(". > 1"))]))], source: source)
        ImmediateScheduler.shared.performAsCurrent { _ = chain.subscribe(next: { _ in }) }
        #expect(!payload.isDecoded)
        source.sendNext(Message(label: SubjectLabel("s"), value: payload))
        #expect(payload.isDecoded)
        // A computed value is encoded only when written.
        let computed = Payload(computed: .number(3))
        #expect(!computed.isEncoded)
        _ = computed.raw
        #expect(computed.isEncoded)
    }
}

import Runnel
import RunnelExpression
import RunnelJSON
import RunnelProtocol
import Testing

@testable import RunnelServer

/// Runs a stage chain over a virtual clock: a source subject `src`, other subjects created on
/// lookup, and a recording of every event as text (`next` with the exact bytes written).
///
/// One thread only (the test's): subjects, chain and scheduler all run inside the test body,
/// which is why the mutable state needs no lock beyond `Locked` for the `@Sendable` closures.
final class StageHarness: @unchecked Sendable {
    let scheduler = TestScheduler()
    let source = Subject<Message>()
    let sourceLabel = SubjectLabel("src")
    private let others = Locked<[String: Subject<Message>]>([:])
    private let recorded = Locked<[String]>([])
    private var disposable: Disposable?
    let limits: StageLimits
    /// One compiled expression per identical one in every chain `compiler()` compiles, as in
    /// a server.
    let interner = ExpressionInterner(clock: { 1_000 })

    init(maxBufferValues: Int = 100, maxStages: Int = 8, evalBudget: ExpressionBudget = .standard) {
        limits = StageLimits(
            maxStages: maxStages, maxBufferValues: maxBufferValues, evalBudget: evalBudget, clock: { 1_000 })
    }

    /// The subject `name` (created on first use), as the lookup gives it to stages.
    func subject(_ name: String) -> Subject<Message> {
        others.withLock { subjects in
            if let existing = subjects[name] { return existing }
            let created = Subject<Message>()
            subjects[name] = created
            return created
        }
    }

    func compiler() -> StageCompiler {
        StageCompiler(
            scheduler: scheduler, limits: limits, defaultLabel: sourceLabel, account: nil, interner: interner
        ) { [self] name, _ throws(ProtocolError) in
            if name == "missing" { throw ProtocolError(.unknownSubject, "no subject 'missing'") }
            return subject(name)
        }
    }

    /// Compiles `ops` (a JSON array's text) over `src`.
    func compile(_ ops: String) throws(ProtocolError) -> Signal<Message> {
        let stages: [JSONValue]
        do {
            guard case .array(let items) = try RawJSON(validating: ops).decoded() else {
                throw ProtocolError(.badRequest, "ops must be an array")
            }
            stages = items
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.badRequest, "\(error)")
        }
        return try compiler().compile(stages, source: source)
    }

    /// Compiles `ops` and subscribes, recording events.
    @discardableResult
    func run(_ ops: String) throws -> StageHarness {
        let chain = try compile(ops)
        disposable = scheduler.performAsCurrent {
            chain.subscribe(
                next: { [recorded] message in
                    recorded.withLock { $0.append("\(message.label.name) \(message.value.raw)") }
                },
                error: { [recorded] error in
                    let failure = ProtocolError(wrapping: error)
                    recorded.withLock {
                        $0.append(
                            "error \(failure.code.rawValue) \(failure.stage.map(String.init) ?? "-") \(failure.message)"
                        )
                    }
                },
                completed: { [recorded] in recorded.withLock { $0.append("completed") } })
        }
        return self
    }

    /// Publishes `json` (exact bytes) to `src`, or to `subject`. Sends run with the test
    /// scheduler current, as the server's run on its loop, so inner subscriptions are inline.
    func pub(_ json: String, to subject: String = "src") throws {
        let value = Message(label: SubjectLabel(subject), raw: try RawJSON(validating: json))
        scheduler.performAsCurrent {
            if subject == "src" { source.sendNext(value) } else { self.subject(subject).sendNext(value) }
        }
    }

    func pub(_ values: [String], to subject: String = "src") throws {
        for value in values { try pub(value, to: subject) }
    }

    func complete(_ subject: String = "src") {
        scheduler.performAsCurrent {
            if subject == "src" { source.sendCompleted() } else { self.subject(subject).sendCompleted() }
        }
    }

    func fail(_ subject: String = "src", _ message: String = "boom") {
        let error = ProtocolError(.subjectError, message)
        scheduler.performAsCurrent {
            if subject == "src" { source.sendError(error) } else { self.subject(subject).sendError(error) }
        }
    }

    func advance(_ seconds: Double) {
        scheduler.advance(by: .nanoseconds(Int64(seconds * 1_000_000_000)))
    }

    func dispose() { disposable?.dispose() }

    /// What was recorded since the last call: `"subject bytes"` per value, `"completed"`,
    /// `"error CODE STAGE MESSAGE"`.
    func take() -> [String] {
        recorded.withLock { events in
            defer { events = [] }; return events
        }
    }

    /// The values' bytes alone, since the last call, with terminal events as above.
    func values() -> [String] {
        take().map { event in
            if let space = event.firstIndex(of: " "), !event.hasPrefix("error ") {
                return String(event[event.index(after: space)...])
            }
            return event
        }
    }
}

/// The error `ops` fails to compile with.
func compileError(_ ops: String, maxStages: Int = 8) -> ProtocolError? {
    do {
        _ = try StageHarness(maxStages: maxStages).compile(ops)
        return nil
    } catch {
        return error
    }
}

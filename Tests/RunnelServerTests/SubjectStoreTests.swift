import Runnel
import RunnelJSON
import RunnelProtocol
import Testing

@testable import RunnelServer

@Suite struct MemorySubjectStoreTests {
    /// No stages run here: any bound will do.
    let bound = PublishEvaluationBound(milliseconds: 20, clock: TestScheduler())

    /// The values a signal sends, as text, while subscribed inline.
    private final class Values: @unchecked Sendable {
        var texts: [String] = []
        var completed = false
    }

    private func record(_ signal: Signal<Message>, into values: Values) -> Disposable {
        TestScheduler().performAsCurrent {
            signal.subscribe(
                next: { values.texts.append("\($0.label.name)=\($0.value.raw)") },
                completed: { values.completed = true })
        }
    }

    @Test func publishCountsAndDelivers() throws {
        let store = MemorySubjectStore()
        let entry = store.create("a", kind: .replay, capacity: 2, retainMilliseconds: nil, initial: nil, durable: false)
        for text in ["1", "2", "3"] {
            store.publish(try RawJSON(validating: text), members: JSONMemberIndex(), to: entry, bounding: bound)
        }
        #expect(entry.published == 3)
        let values = Values()
        _ = record(entry.subject, into: values)
        #expect(values.texts == ["a=2", "a=3"])
    }

    @Test func patternsJoinSubjectsCreatedLaterAndLeaveDeletedOnes() throws {
        let store = MemorySubjectStore()
        let early = store.create(
            "x.early", kind: .subject, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
        let values = Values()
        let subscription = record(store.patternSignal(SubjectPattern("x.*"), admitting: nil), into: values)
        let late = store.create(
            "x.late", kind: .subject, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
        _ = store.create(
            "y.other", kind: .subject, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
        store.publish(.null, members: JSONMemberIndex(), to: early, bounding: bound)
        store.publish(.null, members: JSONMemberIndex(), to: late, bounding: bound)
        #expect(values.texts == ["x.early=null", "x.late=null"])
        store.delete(late)
        #expect(late.isDeleted && store["x.late"] == nil && late.isTerminated)
        #expect(!values.completed)
        store.terminate(early, error: nil)
        #expect(!values.completed)
        subscription.dispose()
        let again = store.create(
            "x.again", kind: .subject, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
        #expect(again.subject.subscriberCount == 0)
    }

    @Test func terminateWithError() {
        let store = MemorySubjectStore()
        let entry = store.create(
            "a", kind: .behavior, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
        store.terminate(entry, error: ProtocolError(.subjectError, "boom"))
        guard case .error(let error as ProtocolError)? = entry.subject.terminalEvent else {
            Issue.record("not terminated with an error")
            return
        }
        #expect(error == ProtocolError(.subjectError, "boom"))
    }

    @Test func listIsSortedAndFilteredByPrefix() {
        let store = MemorySubjectStore()
        for name in ["b.2", "a", "b.1", "bb"] {
            _ = store.create(name, kind: .subject, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
        }
        #expect(store.list(prefix: "b.").map(\.name) == ["b.1", "b.2"])
        #expect(store.list(prefix: "").map(\.name) == ["a", "b.1", "b.2", "bb"])
        #expect(store.count == 4)
    }
}

@Suite struct PatternIndexTests {
    private final class Member {
        let name: String
        init(_ name: String) { self.name = name }
    }

    @Test func matchesLiteralsStarsAndRests() {
        let index = PatternIndex<Member>()
        let members = ["a.b", "a.*", "a.>", "*.b", ">", "a.b.c"].map { ($0, Member($0)) }
        for (pattern, member) in members { index.insert(member, for: SubjectPattern(pattern)) }
        #expect(Set(index.matches("a.b").map(\.name)) == ["a.b", "a.*", "a.>", "*.b", ">"])
        #expect(Set(index.matches("a.b.c").map(\.name)) == ["a.>", ">", "a.b.c"])
        #expect(Set(index.matches("a").map(\.name)) == [">"])
        #expect(Set(index.matches("z.b").map(\.name)) == ["*.b", ">"])
        #expect(index.count == 6)
    }

    @Test func removeForgetsOnlyThatMemberAndPrunes() {
        let index = PatternIndex<Member>()
        let first = Member("1")
        let second = Member("2")
        index.insert(first, for: SubjectPattern("a.*.c"))
        index.insert(second, for: SubjectPattern("a.*.c"))
        index.remove(first, for: SubjectPattern("a.*.c"))
        #expect(index.matches("a.b.c").map(\.name) == ["2"])
        index.remove(first, for: SubjectPattern("a.*.c"))
        #expect(index.count == 1)
        index.remove(second, for: SubjectPattern("a.*.c"))
        #expect(index.matches("a.b.c").isEmpty && index.count == 0)
    }
}

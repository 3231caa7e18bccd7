import Testing

@testable import Runnel

@Suite struct DisposableTests {
    @Test func blockRunsOnceAndMarksDisposed() {
        let runs = Locked(0)
        let disposable = Disposable { runs.withLock { $0 += 1 } }
        #expect(!disposable.isDisposed)
        disposable.dispose()
        disposable.dispose()
        #expect(disposable.isDisposed)
        #expect(runs.withLock { $0 } == 1)
    }

    @Test func compoundDisposesChildrenAndLateAdditionsAtOnce() {
        let first = Disposable()
        let compound = CompoundDisposable([first])
        compound.dispose()
        #expect(first.isDisposed)
        let late = Disposable()
        compound.add(late)
        #expect(late.isDisposed)
        #expect(compound.count == 0)
    }

    @Test func compoundRemoveDoesNotDispose() {
        let child = Disposable()
        let compound = CompoundDisposable()
        compound.add(child)
        #expect(compound.count == 1)
        compound.remove(child)
        #expect(compound.count == 0)
        compound.dispose()
        #expect(!child.isDisposed)
    }

    @Test func compoundChildMayTouchCompoundWhileDisposed() {
        let compound = CompoundDisposable()
        let reentered = Locked(false)
        compound.add {
            compound.add(Disposable())
            reentered.withLock { $0 = true }
        }
        compound.dispose()
        #expect(reentered.withLock { $0 })
    }

    @Test func serialSwapInReturnsOldUndisposed() {
        let first = Disposable()
        let second = Disposable()
        let serial = SerialDisposable(first)
        let old = serial.swapIn(second)
        #expect(old === first)
        #expect(!first.isDisposed)
        #expect(serial.inner === second)
        serial.dispose()
        #expect(second.isDisposed)
    }

    @Test func serialDisposesNewInnerAfterDisposal() {
        let serial = SerialDisposable()
        serial.dispose()
        let late = Disposable()
        #expect(serial.swapIn(late) == nil)
        #expect(late.isDisposed)
        let later = Disposable()
        serial.inner = later
        #expect(later.isDisposed)
    }

    @Test func scopedDisposesOnDeinit() {
        let inner = Disposable()
        do {
            let scoped = inner.asScopedDisposable()
            #expect(!inner.isDisposed)
            _ = scoped
        }
        #expect(inner.isDisposed)
    }

    @Test func scopedDisposeIsExplicitToo() {
        let inner = Disposable()
        let scoped = ScopedDisposable(inner)
        scoped.dispose()
        #expect(inner.isDisposed)
        #expect(scoped.asScopedDisposable() === scoped)
    }
}

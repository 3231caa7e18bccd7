extension Signal {
    /// Sends `scheduler`'s current time every `interval`, the first time one `interval` after
    /// subscribing; never completes or fails (ReactiveCocoa's `interval:onScheduler:withLeeway:`).
    ///
    /// `leeway` is how late a tick may be, for schedulers that coalesce timers. Ticks run on
    /// `scheduler`, one at a time. Disposing the subscription cancels the timer.
    public static func interval(_ interval: Duration, on scheduler: any Scheduler, leeway: Duration = .zero)
        -> Signal<SchedulerTime> where Value == SchedulerTime
    {
        Signal<SchedulerTime>.operatorSignal(name: "+interval: \(interval) onScheduler: \(scheduler)") { downstream in
            scheduler.after(scheduler.now.advanced(by: interval), repeatingEvery: interval, leeway: leeway) {
                downstream.sendNext(scheduler.now)
            }
        }
    }
}

/** Carries one tenant's change events to its other replicas (Redis pub/sub in hosted mode). */
export interface ChangeRelay {
  publish(): void;
  listen(onRemoteChange: () => void): () => void;
}

/** Where one tenant's resource-list changes go: its legacy sessions, its listen streams, on every replica. */
export class ChangeHub {
  private readonly sinks = new Set<() => void>();
  private readonly closers = new Set<() => void>();
  private readonly stopRelay?: () => void;

  constructor(private readonly relay?: ChangeRelay) {
    this.stopRelay = relay?.listen(() => this.deliver());
  }

  add(onListChanged: () => void): () => void {
    this.sinks.add(onListChanged);
    return () => this.sinks.delete(onListChanged);
  }

  resourcesChanged(): void {
    this.deliver();
    this.relay?.publish();
  }

  /** Runs `fn` once when this hub (its tenant) closes; returns the cancel. */
  onClose(fn: () => void): () => void {
    this.closers.add(fn);
    return () => this.closers.delete(fn);
  }

  close(): void {
    this.stopRelay?.();
    this.sinks.clear();
    const closers = [...this.closers];
    this.closers.clear();
    for (const fn of closers) fn();
  }

  private deliver(): void {
    for (const sink of this.sinks) {
      try {
        sink();
      } catch {
        // a session that went away must not stop the others from hearing it
      }
    }
  }
}

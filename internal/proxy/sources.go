package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/membership"
)

// DefaultSourceTimeout is how long Start and Reload wait for a servers_from
// source's first list when Proxy.SourceTimeout is zero: long enough to ride
// out an etcd leader election and a few retries, short enough that an
// operator who started the proxy is told why it does not serve.
const DefaultSourceTimeout = 10 * time.Second

// A poolSource is the servers_from source of one pool and the goroutine that
// follows it. The pool serves the lists the source hands over; a Reload that
// keeps the pool's servers_from keeps its poolSource.
type poolSource struct {
	pool   string
	url    string // the pool's servers_from, as written
	src    *membership.Source
	cancel context.CancelFunc
	done   chan struct{} // closed when follow has returned, or at once if it never ran
	// applied is the revision of the list the pool last took from the source.
	applied atomic.Int64
}

// revision returns the source's revision of the list the pool serves: the
// last it took, or a later one that changed nothing the pool serves (etcd
// keys rewritten with the same servers).
func (ps *poolSource) revision() int64 {
	return max(ps.applied.Load(), ps.src.Status().Revision)
}

// checkServersFrom checks a pool's servers_from, if it has one, without
// reading it: a URL membership can follow, and no servers of its own.
func checkServersFrom(cfg *config.Pool) error {
	if cfg.ServersFrom == "" {
		return nil
	}
	if len(cfg.Servers) > 0 {
		return errors.New("servers and servers_from both set; a pool takes its servers from one")
	}
	_, err := membership.ParseURL(cfg.ServersFrom)
	return err
}

// openSources opens the sources of the servers_from pools of f that running
// (the sources at work, by pool) lacks or has for another URL, at once, and
// waits for their first lists, at most SourceTimeout. If one fails, those
// opened are closed and the error names the pool.
func (p *Proxy) openSources(f *config.File, running map[string]*poolSource) (map[string]*poolSource, error) {
	timeout := p.SourceTimeout
	if timeout <= 0 {
		timeout = DefaultSourceTimeout
	}
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		opened = map[string]*poolSource{}
		errs   []error
	)
	for _, cfg := range f.Pools {
		if cfg.ServersFrom == "" {
			continue
		}
		if ps := running[cfg.Name]; ps != nil && ps.url == cfg.ServersFrom {
			continue
		}
		mc := p.Sources
		if mc.Logger == nil {
			mc.Logger = p.log
		}
		mc.Logger = mc.Logger.With("pool", cfg.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			src, err := membership.Open(ctx, cfg.ServersFrom, mc)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("proxy: %s:%d: pool %q: %w", f.Path, cfg.KeyLine("servers_from"), cfg.Name, err))
				return
			}
			ps := &poolSource{pool: cfg.Name, url: cfg.ServersFrom, src: src, done: make(chan struct{})}
			ps.applied.Store(src.List().Revision)
			opened[cfg.Name] = ps
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		closeSources(slices.Collect(maps.Values(opened)))
		return nil, errors.Join(errs...)
	}
	return opened, nil
}

// withSources returns f with the servers of each servers_from pool filled in:
// the first list of its source in opened, or else the list the running pool
// serves, which its source last gave. mu must be held, so that no update of a
// running source slips in between.
func (p *Proxy) withSources(f *config.File, opened map[string]*poolSource) *config.File {
	out := &config.File{Path: f.Path, Pools: make([]*config.Pool, len(f.Pools))}
	for i, cfg := range f.Pools {
		out.Pools[i] = cfg
		if cfg.ServersFrom == "" {
			continue
		}
		c := *cfg
		switch ps, pl := opened[cfg.Name], p.pools[cfg.Name]; {
		case ps != nil:
			c.Servers = ps.src.List().Servers
		case pl != nil:
			c.Servers = pl.state.Load().cfg.Servers
		case p.sources[cfg.Name] != nil:
			c.Servers = p.sources[cfg.Name].src.List().Servers
		}
		out.Pools[i] = &c
	}
	return out
}

// installSources makes the sources in opened those of their pools and starts
// following them, and returns the sources that f's pools no longer name, for
// the caller to close once it has released mu. mu must be held.
func (p *Proxy) installSources(f *config.File, opened map[string]*poolSource) (retired []*poolSource) {
	named := map[string]string{}
	for _, cfg := range f.Pools {
		named[cfg.Name] = cfg.ServersFrom
	}
	for name, ps := range p.sources {
		if named[name] != ps.url || opened[name] != nil {
			retired = append(retired, ps)
			delete(p.sources, name)
		}
	}
	for name, ps := range opened {
		ctx, cancel := context.WithCancel(p.ctx)
		ps.cancel = cancel
		p.sources[name] = ps
		go p.follow(ctx, ps)
		p.log.Info("pool follows its servers_from", "pool", name, "source", ps.src.URL().String(),
			"revision", ps.revision(), "servers", len(ps.src.List().Servers))
	}
	return retired
}

// takeSources removes every source from the proxy and returns them, for the
// caller to close once it has released mu. mu must be held.
func (p *Proxy) takeSources() []*poolSource {
	var all []*poolSource
	for name, ps := range p.sources {
		all = append(all, ps)
		delete(p.sources, name)
	}
	return all
}

// closeSources stops the sources and waits for their goroutines. The caller
// must not hold Proxy.mu, which a source's last update may be waiting for.
func closeSources(sources []*poolSource) {
	for _, ps := range sources {
		if ps.cancel != nil {
			ps.cancel()
		} else {
			close(ps.done) // never followed
		}
		ps.src.Close()
		<-ps.done
	}
}

// follow passes each new list of the source to its pool until ctx is done or
// the source is closed.
func (p *Proxy) follow(ctx context.Context, ps *poolSource) {
	defer close(ps.done)
	ps.src.Run(ctx, func(l membership.List) error { return p.applyList(ps, l) })
}

// applyList makes l the servers of ps's pool, as UpdateServers does. A source
// that a Reload or Close has just retired changes nothing: its pool follows
// another source, or none.
func (p *Proxy) applyList(ps *poolSource, l membership.List) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.sources[ps.pool] != ps {
		return nil
	}
	pl := p.pools[ps.pool]
	if pl == nil {
		return fmt.Errorf("proxy: pool %q is not running", ps.pool)
	}
	if err := pl.setServers(l.Servers, "servers_from"); err != nil {
		return err
	}
	ps.applied.Store(l.Revision)
	p.log.Info("servers_from: ring changed", "pool", ps.pool, "source", ps.url, "revision", l.Revision, "servers", len(l.Servers),
		"fingerprint", pl.state.Load().fingerprint)
	return nil
}

package wire

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a loopback TCP proxy that delivers every chunk of bytes Delay
// after it arrived, in each direction: a stand-in for a network with a
// fixed latency. Bandwidth is not limited.
type Proxy struct {
	Delay    time.Duration
	Target   string // host:port of the server
	listener net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
	errs     []error // what went wrong while proxying, returned by Close
}

func (p *Proxy) record(err error) {
	if err = ignoreClosed(err); err != nil {
		p.mu.Lock()
		p.errs = append(p.errs, err)
		p.mu.Unlock()
	}
}

// Listen starts the proxy on a free loopback port.
func (p *Proxy) Listen() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p.listener = l
	p.wg.Add(1)
	go p.accept()
	return nil
}

// Port is the proxy's port on 127.0.0.1.
func (p *Proxy) Port() uint16 { return uint16(p.listener.Addr().(*net.TCPAddr).Port) }

// Close stops accepting, closes every proxied connection and waits for the
// copying to end.
func (p *Proxy) Close() error {
	err := p.listener.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		err = errors.Join(err, ignoreClosed(c.Close()))
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(append([]error{err}, p.errs...)...)
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.Target)
		if err != nil { // the client sees the refusal as a dropped connection
			p.record(errors.Join(err, client.Close()))
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

type packet struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each read delivered Delay after it was read.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	queue := make(chan packet, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pk := range queue {
			time.Sleep(time.Until(pk.due))
			if _, err := dst.Write(pk.data); err != nil {
				for range queue { // drain so the reader is never stuck
				}
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			queue <- packet{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.Delay)}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-done
	p.record(dst.Close()) // the other direction may have closed it first: ignoreClosed
}

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

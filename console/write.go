package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/sirupsen/logrus"
)

// writeHeader must be on every change: a cross-site form or image cannot
// set it, and a cross-site script may not without a CORS preflight the
// console never answers.
const writeHeader = "X-Unilog-Console"

var errReadOnly = errors.New("the console is read-only: start the broker with --admin-ui-write to change topics and groups from it")

// write guards an action: refused unless writes are on and the request
// carries writeHeader (and, with a body, a JSON content type); logged.
func (c *Console) write(action func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !c.o.Write || c.o.Admin == nil:
			c.reply(w, r, nil, &httpError{http.StatusForbidden, errReadOnly})
			return
		case r.Header.Get(writeHeader) == "":
			c.reply(w, r, nil, &httpError{http.StatusForbidden, fmt.Errorf("missing the %s header", writeHeader)})
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				c.reply(w, r, nil, &httpError{http.StatusUnsupportedMediaType, errors.New("want application/json")})
				return
			}
		}
		v, err := action(r)
		log := c.o.Log.WithFields(logrus.Fields{"method": r.Method, "path": r.URL.Path, "remote": r.RemoteAddr})
		if err != nil {
			log.WithError(err).Warn("console change refused")
		} else {
			log.Info("console change")
		}
		c.reply(w, r, v, err)
	}
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest(fmt.Errorf("body: %w", err))
	}
	return nil
}

func (c *Console) createTopic(r *http.Request) (any, error) {
	var body struct {
		Name       string `json:"name"`
		Partitions int32  `json:"partitions"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Name == "" || body.Partitions <= 0 {
		return nil, badRequest(errors.New("want a name and a positive partition count"))
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	return body, c.o.Admin.CreateTopic(ctx, body.Name, body.Partitions)
}

func (c *Console) addPartitions(r *http.Request) (any, error) {
	var body struct {
		Total int32 `json:"total"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Total <= 0 {
		return nil, badRequest(errors.New("want the new total partition count"))
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	return body, c.o.Admin.AddPartitions(ctx, r.PathValue("topic"), body.Total)
}

func (c *Console) deleteTopic(r *http.Request) (any, error) {
	ctx, cancel := requestContext(r)
	defer cancel()
	return map[string]string{"deleted": r.PathValue("topic")}, c.o.Admin.DeleteTopic(ctx, r.PathValue("topic"))
}

func (c *Console) resetGroup(r *http.Request) (any, error) {
	var body struct {
		Topic string `json:"topic"`
		To    string `json:"to"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Topic == "" || body.To == "" {
		return nil, badRequest(errors.New("want a topic and a target (earliest, latest, an offset or a time)"))
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	resets, err := c.o.Admin.ResetGroup(ctx, r.PathValue("group"), body.Topic, body.To)
	return map[string]any{"reset": resets}, err
}

func (c *Console) deleteGroup(r *http.Request) (any, error) {
	ctx, cancel := requestContext(r)
	defer cancel()
	return map[string]string{"deleted": r.PathValue("group")}, c.o.Admin.DeleteGroup(ctx, r.PathValue("group"))
}

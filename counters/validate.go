package counters

// Validate checks a SetRequest on its own, against the bounds it gives;
// bounds stored with the counter are checked by the store, atomically with
// the change.
func (r *SetRequest) Validate() error {
	if err := ValidateName(r.Name); err != nil {
		return err
	}
	c := Counter{Value: r.Value}
	if !r.Min.Keep {
		c.Min = r.Min.Value
	}
	if !r.Max.Keep {
		c.Max = r.Max.Value
	}
	return c.CheckBounds()
}

// ValidateLimit returns EINVALID unless a page's limit is 1 to MaxListLimit.
// Every listing (counters, tickets) takes its limit through it.
func ValidateLimit(limit int64) error {
	if limit < 1 || limit > MaxListLimit {
		return Errorf(EINVALID, "limit must be between 1 and %d.", MaxListLimit)
	}
	return nil
}

// Normalize applies the default limit and validates the filter.
func (f *ListFilter) Normalize() error {
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	if err := ValidateLimit(int64(f.Limit)); err != nil {
		return err
	}
	if f.Prefix != "" {
		if err := validatePart("prefix", f.Prefix); err != nil {
			return err
		}
	}
	if f.After != "" {
		if err := validatePart("after", f.After); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks that exactly one of Prefix and All selects the counters.
func (r *ResetRequest) Validate() error {
	switch {
	case r.All && r.Prefix != "":
		return Errorf(EINVALID, "Give either a non-empty prefix or all, not both.")
	case !r.All && r.Prefix == "":
		return Errorf(EINVALID, "Give a non-empty prefix, or all: true.")
	case r.Prefix != "":
		return validatePart("prefix", r.Prefix)
	}
	return nil
}

// validatePart checks a name fragment (a prefix or a pagination cursor) with
// the rules of a whole name.
func validatePart(field, s string) error {
	if err := ValidateName(s); err != nil {
		return Errorf(EINVALID, "%s: %s", field, ErrorMessage(err))
	}
	return nil
}

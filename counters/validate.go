package counters

// Validate checks a SetRequest on its own; bounds stored with the counter are
// checked by the store, atomically with the change.
func (r *SetRequest) Validate() error {
	if err := ValidateName(r.Name); err != nil {
		return err
	}
	if !r.Min.Keep && !r.Max.Keep && r.Min.Value != nil && r.Max.Value != nil && *r.Min.Value > *r.Max.Value {
		return Errorf(EINVALID, "min (%d) must not be greater than max (%d).", *r.Min.Value, *r.Max.Value)
	}
	if !r.Min.Keep && r.Min.Value != nil && r.Value < *r.Min.Value {
		return Errorf(EOUTOFRANGE, "Value %d is below the counter's min %d.", r.Value, *r.Min.Value)
	}
	if !r.Max.Keep && r.Max.Value != nil && r.Value > *r.Max.Value {
		return Errorf(EOUTOFRANGE, "Value %d is above the counter's max %d.", r.Value, *r.Max.Value)
	}
	return nil
}

// Normalize applies the default limit and validates the filter.
func (f *ListFilter) Normalize() error {
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	if f.Limit < 1 || f.Limit > MaxListLimit {
		return Errorf(EINVALID, "limit must be between 1 and %d.", MaxListLimit)
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
